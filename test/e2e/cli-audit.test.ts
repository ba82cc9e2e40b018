// The audit log and login addresses through the built CLI against a real `serve`: a user's
// actions (an SSH key added, a template saved with a secret in its env and deleted, a failed
// password sign-in) appear in `show audit-log`, newest first, without any value sent; `show
// ipaddrs` lists the address; --limit, --raw, bad flags (exit 2) and a key without the `user`
// family (the server's 403 as exit 1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, createUser, hasStack, makeHome, startWorld, type CliWorld } from './cli-harness.js';
import type { AuditLogRow, IpAddrsReply, TemplateReply } from '../../src/contract/api-types.js';

const ENV = { OPENRIG_SECRET_KEY: '5a'.repeat(32) };

let w: CliWorld;
let home: string;
let key: string;
let email: string;
const as = (args: string[], k = key) => cli(home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: k });

beforeAll(async () => {
  w = await startWorld(ENV);
  email = 'audit-user@example.com';
  key = (await createUser(w, email, ['--password', 'audit e2e password'])).api_key;
  home = makeHome();
}, 60_000);

afterAll(() => w?.stop());

/** The audit rows, once the writes made after the replies are in. */
async function auditRows(min: number): Promise<AuditLogRow[]> {
  for (let i = 0; i < 50; i++) {
    const r = await as(['show', 'audit-log', '--raw']);
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as AuditLogRow[];
    if (rows.length >= min) return rows;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`fewer than ${min} audit rows`);
}

describe('audit log and addresses', { timeout: 60_000 }, () => {
  it('show audit-log: the actions made, newest first, with no value that was sent', async () => {
    expect((await as(['ssh-key', 'add'])).code).toBe(0);
    const made = await as([
      'create',
      'template',
      '--name',
      'audited',
      '--image',
      'ubuntu',
      '--env',
      '-e HF_TOKEN=hf_e2e_never_logged',
      '--raw',
    ]);
    expect(made.code, made.stderr).toBe(0);
    const hash = (JSON.parse(made.stdout) as TemplateReply).template.hash_id;
    expect((await as(['delete', 'template', hash])).code).toBe(0);
    // A failed password sign-in is recorded on the account it names.
    const failed = await fetch(`${w.url}/api/v0/users/login/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'not the password' }),
    });
    expect(failed.status).toBe(401);

    const rows = await auditRows(4);
    expect(rows.map((r) => [r.api_route, r.status, r.credential])).toEqual([
      ['POST /api/v0/users/login/', 401, 'password'],
      ['DELETE /api/v0/template/', 200, 'api_key'],
      ['POST /api/v0/template/', 200, 'api_key'],
      ['POST /api/v0/ssh/', 200, 'api_key'],
    ]);
    expect(rows[2]!.args.body).toContain('env');

    const table = await as(['show', 'audit-log', '--wide']);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^Time\s+Address\s+Credential\s+Request\s+Status\s+Args$/);
    expect(lines).toHaveLength(5);
    expect(lines[1]).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\s+127\.0\.0\.1\s+password sign-in\s+POST \/api\/v0\/users\/login\/\s+401\s+\{email, password\}$/,
    );
    expect(lines[3]).toMatch(/POST \/api\/v0\/template\/\s+200\s+\{name, image, private, env\}$/);
    for (const out of [table.stdout, JSON.stringify(rows)]) {
      expect(out).not.toContain('hf_e2e_never_logged');
      expect(out).not.toContain('not the password');
    }

    const one = await as(['show', 'audit-log', '--limit', '1', '--raw']);
    expect((JSON.parse(one.stdout) as AuditLogRow[]).map((r) => r.api_route)).toEqual([
      'POST /api/v0/users/login/',
    ]);
  });

  it('show ipaddrs: the address that used the account', async () => {
    const raw = await as(['show', 'ipaddrs', '--raw']);
    expect(raw.code, raw.stderr).toBe(0);
    const { results } = JSON.parse(raw.stdout) as IpAddrsReply;
    expect(results.map((r) => [r.ip, r.first_location])).toEqual([['127.0.0.1', null]]);
    const table = await as(['show', 'ipaddrs']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      /^Address\s+First seen\s+Last seen\n127\.0\.0\.1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\s+\S/,
    );
  });

  it('bad flags send nothing (exit 2); a key without user read gets the server 403 (exit 1)', async () => {
    for (const [args, msg] of [
      [['--limit', '0'], '--limit must be a positive whole number'],
      [['--limit', '1001'], '--limit must be at most 1000'],
      [['--limit', 'x'], '--limit must be a positive whole number'],
    ] as const) {
      const r = await as(['show', 'audit-log', ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(msg);
      expect(hasStack(r.stderr)).toBe(false);
    }
    const scoped = await as([
      'api-key',
      'create',
      '--name',
      'inst-only',
      '--permissions',
      '{"instances":"write"}',
      '--raw',
    ]);
    expect(scoped.code, scoped.stderr).toBe(0);
    const scopedKey = (JSON.parse(scoped.stdout) as { key: string }).key;
    for (const cmd of [
      ['show', 'audit-log'],
      ['show', 'ipaddrs'],
    ]) {
      const r = await as(cmd, scopedKey);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe('openrig: This API key lacks read permission on user\n');
    }
  });
});
