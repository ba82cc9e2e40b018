// The official CLI's `update instance ID [--template_id N] [--template_hash_id H] [--image I]
// [--args A] [--env JSON] [--onstart S]`: `PUT /instances/update_template/ID/` with `{id, …the
// options given}` (nothing for an option not given), each request as that CLI sends it; the CLI
// reads `success` and prints `updated_instance` (docs/compatibility.md).
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { agentMachine, renter } from '../helpers/market.js';
import { cli, cliCreateBody, expectOk } from './official-cli.js';

describeEachDb('official CLI: update instance', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let id: number;
  beforeAll(async () => {
    key = (await renter(t())).apiKey;
    const host = await t().user();
    const reg = await t().request('POST', '/api/agent/v1/register', {
      key: host.apiKey,
      body: {
        agent_uid: `agent-cli-update-${dialect}`,
        runtime: 'docker',
        price_gpu: 0.4,
        config_generations: true,
        machines: [agentMachine(0)],
      },
    });
    expect(reg.status, reg.raw).toBe(200);
    const c = await cli(t(), {
      method: 'PUT',
      path: `/asks/${reg.body.machines[0].machine_id}/`,
      key,
      json: cliCreateBody({ onstart: 'echo one' }),
    });
    expectOk(c);
    id = c.body.new_contract;
  });

  const row = () =>
    t().deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('--image, --env (JSON) and --onstart: {success, updated_instance}', async () => {
    // vastai update instance ID --image python:3.12 --env '{"HF_TOKEN": "abc", "-p 8080:8080": "1"}' --onstart 'echo two'
    const r = await cli(t(), {
      method: 'PUT',
      path: `/instances/update_template/${id}/`,
      key,
      json: { id, image: 'python:3.12', env: { HF_TOKEN: 'abc', '-p 8080:8080': '1' }, onstart: 'echo two' },
    });
    expectOk(r);
    expect(r.body.success).toBe(true);
    expect(r.body.updated_instance).toMatchObject({
      id,
      image_uuid: 'python:3.12',
      onstart: 'echo two',
      actual_status: 'loading',
    });
    expect(await row()).toMatchObject({ image: 'python:3.12', onstart: 'echo two', config_generation: 2 });
  });

  it('--args: one string, split as a shell splits it, under runtype args', async () => {
    // vastai update instance ID --args "-c 'echo hi; sleep infinity'"
    const r = await cli(t(), {
      method: 'PUT',
      path: `/instances/update_template/${id}/`,
      key,
      json: { id, args: "-c 'echo hi; sleep infinity'" },
    });
    expectOk(r);
    expect(await row()).toMatchObject({
      runtype: 'args',
      args: JSON.stringify(['-c', 'echo hi; sleep infinity']),
    });
  });

  it('--template_hash_id and --template_id: the template, the given fields on top', async () => {
    const tpl = await t().request('POST', '/api/v0/template/', {
      key,
      body: { name: 'tgi', image: 'ghcr.io/x/tgi', tag: '1.0.3', onstart: 'echo tpl', runtype: 'ssh' },
    });
    const { id: tplId, hash_id: hash } = tpl.body.template;
    // vastai update instance ID --template_hash_id HASH
    const r = await cli(t(), {
      method: 'PUT',
      path: `/instances/update_template/${id}/`,
      key,
      json: { id, template_hash_id: hash },
    });
    expectOk(r);
    expect(r.body.updated_instance).toMatchObject({
      image_uuid: 'ghcr.io/x/tgi:1.0.3',
      template_hash_id: hash,
    });
    // vastai update instance ID --template_id N --onstart 'echo mine'
    const r2 = await cli(t(), {
      method: 'PUT',
      path: `/instances/update_template/${id}/`,
      key,
      json: { id, template_id: tplId, onstart: 'echo mine' },
    });
    expectOk(r2);
    expect(await row()).toMatchObject({ image: 'ghcr.io/x/tgi:1.0.3', onstart: 'echo mine', runtype: 'ssh' });
  });

  it('errors are JSON the CLI prints with their status: an unknown id, a bad image', async () => {
    const missing = await cli(t(), {
      method: 'PUT',
      path: `/instances/update_template/99999999/`,
      key,
      json: { id: 99999999, image: 'x' },
    });
    expect(missing.status).toBe(404);
    expect(missing.contentType).toBe('application/json');
    expect(missing.body).toMatchObject({ success: false, error: 'not_found' });
    const bad = await cli(t(), {
      method: 'PUT',
      path: `/instances/update_template/${id}/`,
      key,
      json: { id, image: 'two words' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toContain('image');
  });
});
