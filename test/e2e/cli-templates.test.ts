// Templates through the built CLI against a real `serve` and a real `openrig agent` (process
// runtime): a renter saves a template, lists it, rents the agent's machine from it with only the
// hash and one variable (the instance gets the template's image, disk, onstart, env and name),
// deletes it, and a create from the deleted hash is the server's 404 message with exit 1. Bad
// flags send nothing (exit 2).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, createUser, startAgentWorld, type AgentWorld, expectUsageError } from './cli-harness.js';
import type { Instance, Template, TemplatesReply } from '../../src/contract/api-types.js';

const ENV = { OPENRIG_SECRET_KEY: '7e'.repeat(32), OPENRIG_HEARTBEAT_S: '0.5' };

let w: AgentWorld;
let machine: number;
let home: string;
let key: string;
let otherKey: string;
const as = (args: string[], k = key) => cli(home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: k });

beforeAll(async () => {
  w = await startAgentWorld({ env: ENV, host: 'tpl-host@example.com', renter: 'tpl-renter@example.com' });
  ({ machine, home, renterKey: key } = w);
  otherKey = (await createUser(w, 'tpl-other@example.com')).api_key;
}, 120_000);

afterAll(() => w?.stop());

describe('templates', { timeout: 90_000 }, () => {
  let tpl: Template;

  it('create template --raw: the saved template, private unless --public', async () => {
    const r = await as([
      'create',
      'template',
      '--name',
      'e2e-ubuntu',
      '--image',
      'ubuntu',
      '--tag',
      '22.04',
      '--disk',
      '12',
      '--env',
      '-e FROM_TEMPLATE=yes',
      '--onstart-cmd',
      'echo from-template',
      '--ssh',
      '--raw',
    ]);
    expect(r.code, r.stderr).toBe(0);
    tpl = (JSON.parse(r.stdout) as { template: Template }).template;
    expect(tpl).toMatchObject({
      name: 'e2e-ubuntu',
      image: 'ubuntu',
      tag: '22.04',
      recommended_disk_space: 12,
      runtype: 'ssh',
      env: '-e FROM_TEMPLATE=yes',
      onstart: 'echo from-template',
      private: true,
    });
    expect(tpl.hash_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it("show templates: a row with the template's fields; --mine leaves out another user's public one", async () => {
    const other = await as(
      ['create', 'template', '--name', 'e2e-public', '--image', 'alpine', '--public'],
      otherKey,
    );
    expect(other.code, other.stderr).toBe(0);
    expect(other.stdout).toMatch(/^Created template e2e-public \(public\), hash [0-9a-f]{32}\n/);

    const r = await as(['show', 'templates']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Hash\s+Name\s+Image\s+Disk\s+Runtype\s+Visibility\s+Created\n/);
    expect(r.stdout).toMatch(
      new RegExp(`^${tpl.hash_id}\\s+e2e-ubuntu\\s+ubuntu:22\\.04\\s+12 GB\\s+ssh\\s+private\\s+`, 'm'),
    );
    expect(r.stdout).toMatch(/\se2e-public\s+alpine\s.*\spublic\s/);

    const mine = JSON.parse((await as(['show', 'templates', '--mine', '--raw'])).stdout) as TemplatesReply;
    expect(mine.templates.map((t) => t.hash_id)).toEqual([tpl.hash_id]);
  });

  it("create instance --template: the instance has the template's image, disk and name", async () => {
    // Only the hash and an extra variable: the template gives image, disk, onstart and its env.
    const c = await as([
      'create',
      'instance',
      String(machine),
      '--template',
      tpl.hash_id,
      '--env',
      'EXTRA=1',
    ]);
    expect(c.code, `${c.stdout}${c.stderr}`).toBe(0);
    const id = /Created instance (\d+)/.exec(c.stdout)![1]!;
    const s = await as(['show', 'instance', id, '--raw']);
    expect(s.code, s.stderr).toBe(0);
    const inst = (JSON.parse(s.stdout) as { instances: Instance }).instances;
    expect(inst).toMatchObject({
      image_uuid: 'ubuntu:22.04',
      disk_space: 12,
      template_name: 'e2e-ubuntu',
      template_hash_id: tpl.hash_id,
      onstart: 'echo from-template',
    });
    expect(Object.fromEntries(inst.extra_env as [string, string][])).toEqual({
      FROM_TEMPLATE: 'yes',
      EXTRA: '1',
    });
    expect((await as(['destroy', 'instance', id])).code).toBe(0);
  });

  it("delete template; a create from the deleted hash is the server's 404 message, exit 1", async () => {
    const d = await as(['delete', 'template', tpl.hash_id]);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toBe(`Template ${tpl.hash_id} deleted\n`);
    const list = JSON.parse((await as(['show', 'templates', '--mine', '--raw'])).stdout) as TemplatesReply;
    expect(list.templates).toEqual([]);

    const c = await as(['create', 'instance', String(machine), '--template', tpl.hash_id]);
    expect(c.code).toBe(1);
    expect(c.stdout).toBe('');
    expect(c.stderr).toBe(
      `openrig: No template with hash_id "${tpl.hash_id}" that you may use: it is unknown, deleted, updated (an update gives a new hash_id) or another user's private template\n`,
    );
    const again = await as(['delete', 'template', tpl.hash_id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^openrig: .+\n$/);
  });

  it.each([
    [['create', 'template', '--image', 'ubuntu'], "required option '--name <name>' not specified"],
    [['create', 'template', '--name', 'n', '--image', 'i', '--ssh', '--args'], '--ssh or --args, not both'],
    [['create', 'template', '--name', 'n', '--image', 'i', '--env', '-x 1'], '--env: '],
    [['create', 'instance', '1', '--template', 'h', '--disk', '0'], '--disk must be a positive'],
    [['create', 'instance', '1', '--disk', '10'], '--image is required'],
  ])('usage error %j: exit 2, says why, sends nothing', async (args, msg) => {
    const r = await as(args);
    expectUsageError(r, msg);
  });
});
