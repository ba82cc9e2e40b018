// The CLI's account-safety commands against a real server: `login --email` signs in with the
// password and stores a fresh API key (a lost key is never a lock-out), `api-key delete` of the key
// in use refuses without --yes when there is no terminal to ask on, and `logout --everywhere` ends
// every session of the account.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, createUser, makeHome, startWorld, type CliWorld } from './cli-harness.js';

let w: CliWorld;
let key: string;
const EMAIL = 'cli-security@example.com';
const PASSWORD = 'a long sign-in password';

beforeAll(async () => {
  w = await startWorld();
  key = (await createUser(w, EMAIL, ['--password', PASSWORD])).api_key;
});
afterAll(() => w?.stop());

describe('account safety from the CLI', { timeout: 120_000 }, () => {
  it('login --email stores a fresh key that works; the password is not stored', async () => {
    const home = makeHome();
    const xdg = path.join(home, 'xdg');
    const r = await cli(home, ['login', '--url', w.url, '--email', EMAIL], {
      XDG_CONFIG_HOME: xdg,
      OPENRIG_PASSWORD: PASSWORD,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const stored = JSON.parse(readFileSync(path.join(xdg, 'openrig', 'config.json'), 'utf8'));
    expect(stored.api_key).toMatch(/^or_/);
    expect(stored.api_key).not.toBe(key);
    expect(JSON.stringify(stored)).not.toContain(PASSWORD);
    const me = await cli(home, ['show', 'user'], { XDG_CONFIG_HOME: xdg });
    expect(me.code).toBe(0);
    expect(me.stdout).toContain(EMAIL);
    const wrong = await cli(makeHome(), ['login', '--url', w.url, '--email', EMAIL], {
      OPENRIG_PASSWORD: 'not it',
    });
    expect(wrong.code).toBe(1);
  });

  it('api-key delete of the key in use needs --yes without a terminal; another key is deleted at once', async () => {
    const home = makeHome();
    const made = (await (
      await fetch(`${w.url}/api/v0/auth/apikeys/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'spare' }),
      })
    ).json()) as any;
    const spare = made.key as string;
    const spareId = made.id as number;
    const other = await cli(home, ['api-key', 'delete', String(spareId), '--url', w.url, '--api-key', key]);
    expect(other.code).toBe(0);
    const list = await fetch(`${w.url}/api/v0/auth/apikeys/`, {
      headers: { authorization: `Bearer ${spare}` },
    });
    expect(list.status).toBe(401);

    const second = (await (
      await fetch(`${w.url}/api/v0/auth/apikeys/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'self' }),
      })
    ).json()) as any;
    const self = ['--url', w.url, '--api-key', second.key as string];
    const refused = await cli(home, ['api-key', 'delete', String(second.id), ...self]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--yes');
    expect((await cli(home, ['show', 'user', ...self])).code).toBe(0);
    const done = await cli(home, ['api-key', 'delete', String(second.id), '--yes', ...self]);
    expect(done.code).toBe(0);
    expect((await cli(home, ['show', 'user', ...self])).code).toBe(1);
  });

  it('logout --everywhere ends the browser sessions of the account', async () => {
    const login = await fetch(`${w.url}/api/v0/users/login/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    const before = await fetch(`${w.url}/api/v0/users/current/`, { headers: { cookie } });
    expect(before.status).toBe(200);
    const r = await cli(makeHome(), ['logout', '--everywhere', '--url', w.url, '--api-key', key]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Ended [1-9]\d* sessions?/);
    const after = await fetch(`${w.url}/api/v0/users/current/`, { headers: { cookie } });
    expect(after.status).toBe(401);
  });
});
