// The CLI as a subprocess against a real server: settings (flags, environment, `login` with a 0600
// file), exit codes (0, 1 API error with the server's msg, 2 usage), no stack traces, --raw,
// API keys and SSH keys.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, createUser, hasStack, makeHome, startWorld, type CliWorld } from './cli-harness.js';

let w: CliWorld;

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}
let key: string;

beforeAll(async () => {
  w = await startWorld();
  key = (await createUser(w, 'cli-account@example.com')).api_key;
});
afterAll(() => w?.stop());

describe('settings and exit codes', { timeout: 90_000 }, () => {
  it('--url and --api-key: show user prints an aligned account summary', async () => {
    const r = await cli(makeHome(), ['show', 'user', '--url', w.url, '--api-key', key]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Email:\s+cli-account@example\.com$/m);
    expect(r.stdout).toMatch(/^Balance:\s+\$100\.00$/m);
  });

  it('--raw prints the server JSON unchanged', async () => {
    const r = await cli(makeHome(), ['show', 'user', '--raw', '--url', w.url, '--api-key', key]);
    const direct = await (
      await fetch(`${w.url}/api/v0/users/current/`, { headers: { authorization: `Bearer ${key}` } })
    ).text();
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(direct + '\n');
  });

  it('OPENRIG_URL and OPENRIG_API_KEY work, and a flag beats them', async () => {
    const home = makeHome();
    expect((await cli(home, ['show', 'user'], { OPENRIG_URL: w.url, OPENRIG_API_KEY: key })).code).toBe(0);
    const r = await cli(home, ['show', 'user', '--api-key', 'or_wrong'], {
      OPENRIG_URL: w.url,
      OPENRIG_API_KEY: key,
    });
    expect(r.code).toBe(1);
  });

  it('a bad key: exit 1, the server msg on stderr, no stack trace', async () => {
    const r = await cli(makeHome(), ['ssh-key', 'show', '--url', w.url, '--api-key', 'or_not_a_key']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('openrig: Invalid user key\n');
    expect(r.stdout).toBe('');
  });

  it('--raw with an API error prints the error body on stdout too', async () => {
    const r = await cli(makeHome(), ['show', 'user', '--raw', '--url', w.url, '--api-key', 'or_not_a_key']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ error: 'auth_error', msg: 'Invalid user key' });
  });

  it('an unreachable server: exit 1, one clear line, no stack trace', async () => {
    const port = await closedPort();
    const r = await cli(makeHome(), ['show', 'user', '--url', `http://127.0.0.1:${port}`, '--api-key', key]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`openrig: cannot reach the server at http://127.0.0.1:${port} (ECONNREFUSED)\n`);
    expect(hasStack(r.stderr)).toBe(false);
  });

  it.each([
    [['show', 'instance', 'abc'], 'instance ID must be a positive whole number'],
    [['show', 'bogus'], "unknown command 'bogus'"],
    [['search', 'offers', 'num_gpus'], 'expected an operator'],
    [['create', 'instance', '5', '--disk', '10'], '--image is required'],
    [['show', 'user', '--url', 'ftp://x'], '--url must start with http'],
  ])('usage error %j: exit 2 and says why', async (args, msg) => {
    const r = await cli(makeHome(), [
      ...args,
      ...(args.includes('--url') ? [] : ['--url', w.url]),
      '--api-key',
      key,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(msg);
    expect(hasStack(r.stderr)).toBe(false);
  });

  it('no API key anywhere is a usage error naming the ways to give one', async () => {
    const r = await cli(makeHome(), ['show', 'user', '--url', w.url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('openrig login');
  });
});

describe('set account', { timeout: 90_000 }, () => {
  const as = (args: string[], k = key) => cli(makeHome(), [...args, '--url', w.url, '--api-key', k]);

  it('changes the name, billing address and balance alert; show user prints them', async () => {
    const r = await as([
      'set',
      'account',
      '--fullname',
      'Ada Lovelace',
      '--billing-line1',
      '12 St James Sq',
      '--billing-city',
      'London',
      '--billing-zip',
      'SW1Y 4JH',
      '--billing-country',
      'GB',
      '--balance-threshold',
      '10',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^Account updated: fullname, billaddress_line1, billaddress_city, billaddress_zip, billaddress_country, balance_threshold_enabled, balance_threshold$/m,
    );
    const show = await as(['show', 'user']);
    expect(show.stdout).toMatch(/^Name:\s+Ada Lovelace$/m);
    expect(show.stdout).toMatch(/^Billing address:\s+12 St James Sq, London SW1Y 4JH, GB$/m);
    expect(show.stdout).toMatch(/^Balance alert:\s+at or below \$10\.00$/m);
    // Off keeps the threshold; "" clears a field.
    expect((await as(['set', 'account', '--balance-threshold', 'off', '--billing-zip', ''])).code).toBe(0);
    const raw = JSON.parse((await as(['show', 'user', '--raw'])).stdout) as Record<string, unknown>;
    expect(raw).toMatchObject({
      balance_threshold_enabled: false,
      balance_threshold: 10,
      billaddress_zip: null,
      billaddress_city: 'London',
    });
  });

  it("nothing to change is a usage error (exit 2); the server's refusal is exit 1 with its msg", async () => {
    const none = await as(['set', 'account']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(
      'nothing to change: give --fullname, --balance-threshold or --billing-line1',
    );
    const long = await as(['set', 'account', '--billing-zip', '9'.repeat(40)]);
    expect(long.code).toBe(1);
    expect(long.stderr).toContain('billaddress_zip must be at most 32 characters (it has 40)');
    expect(hasStack(long.stderr)).toBe(false);
  });
});

describe('openrig login', { timeout: 90_000 }, () => {
  it('checks the key, stores URL and key 0600 under XDG_CONFIG_HOME, and later commands use them', async () => {
    const home = makeHome();
    const xdg = path.join(home, 'xdg');
    const r = await cli(home, ['login', '--url', w.url, '--api-key', key], { XDG_CONFIG_HOME: xdg });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('as cli-account@example.com');
    const file = path.join(xdg, 'openrig', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: w.url, api_key: key });
    const u = await cli(home, ['show', 'user'], { XDG_CONFIG_HOME: xdg });
    expect(u.code).toBe(0);
    expect(u.stdout).toContain('cli-account@example.com');
    expect((await cli(home, ['logout'], { XDG_CONFIG_HOME: xdg })).code).toBe(0);
    expect((await cli(home, ['show', 'user'], { XDG_CONFIG_HOME: xdg })).code).toBe(2);
  });

  it('defaults to ~/.config/openrig, and stores nothing for a wrong key', async () => {
    const home = makeHome();
    const bad = await cli(home, ['login', '--url', w.url, '--api-key', 'or_wrong']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('Invalid user key');
    expect(() => statSync(path.join(home, '.config', 'openrig', 'config.json'))).toThrow();
    expect((await cli(home, ['login', '--url', w.url, '--api-key', key])).code).toBe(0);
    expect(statSync(path.join(home, '.config', 'openrig', 'config.json')).mode & 0o777).toBe(0o600);
  });
});

describe('a broken config file', { timeout: 90_000 }, () => {
  /** A HOME whose config.json is not JSON, in a directory others may read. */
  const brokenHome = () => {
    const home = makeHome();
    mkdirSync(path.join(home, '.config', 'openrig'), { recursive: true, mode: 0o755 });
    chmodSync(path.join(home, '.config', 'openrig'), 0o755);
    writeFileSync(path.join(home, '.config', 'openrig', 'config.json'), '{bad', { mode: 0o600 });
    return home;
  };
  const file = (home: string) => path.join(home, '.config', 'openrig', 'config.json');

  it('a command given --url and --api-key (or the environment) does not need it', async () => {
    const home = brokenHome();
    const flags = await cli(home, ['show', 'user', '--url', w.url, '--api-key', key]);
    expect(flags.code, flags.stderr).toBe(0);
    expect(flags.stdout).toContain('cli-account@example.com');
    const env = await cli(home, ['show', 'user'], { OPENRIG_URL: w.url, OPENRIG_API_KEY: key });
    expect(env.code, env.stderr).toBe(0);
    // Anything taken from the file: the error says what is wrong with it.
    const bare = await cli(home, ['show', 'user', '--url', w.url]);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain('is not valid JSON');
  });

  it('login replaces it with a warning, in a directory made 0700', async () => {
    const home = brokenHome();
    const r = await cli(home, ['login', '--url', w.url, '--api-key', key, '--no-verify']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`openrig: warning: ${file(home)} is not valid JSON`);
    expect(JSON.parse(readFileSync(file(home), 'utf8'))).toEqual({ url: w.url, api_key: key });
    expect(statSync(path.dirname(file(home))).mode & 0o777).toBe(0o700);
    expect((await cli(home, ['show', 'user'])).code).toBe(0);
  });

  it('logout removes it', async () => {
    const home = brokenHome();
    const r = await cli(home, ['logout']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`Removed ${file(home)}.\n`);
    expect(existsSync(file(home))).toBe(false);
  });
});

describe('show instance of no instance', { timeout: 90_000 }, () => {
  it('--raw prints the reply on stdout and says it was not found on stderr, exit 1', async () => {
    const o = ['--url', w.url, '--api-key', key];
    const plain = await cli(makeHome(), ['show', 'instance', '9999', ...o]);
    const raw = await cli(makeHome(), ['show', 'instance', '9999', '--raw', ...o]);
    expect(raw.code).toBe(1);
    expect(JSON.parse(raw.stdout)).toEqual({ instances: null });
    expect(raw.stderr).toBe(
      'openrig: instance 9999 not found (it does not exist, was destroyed, or is not yours)\n',
    );
    expect([plain.code, plain.stdout, plain.stderr]).toEqual([1, '', raw.stderr]);
  });
});

describe('keys', { timeout: 90_000 }, () => {
  it('ssh-key add reads the first ~/.ssh/*.pub; show lists it; delete removes it', async () => {
    const home = makeHome();
    const o = ['--url', w.url, '--api-key', key];
    const add = await cli(home, ['ssh-key', 'add', ...o]);
    expect(add.code).toBe(0);
    expect(add.stdout).toContain(path.join(home, '.ssh', 'id_ed25519.pub'));
    const id = /^Added SSH key:\s+(\d+)$/m.exec(add.stdout)![1]!;
    const show = await cli(home, ['ssh-key', 'show', ...o]);
    expect(show.stdout).toMatch(
      new RegExp(`^\\s*${id}\\s+ssh-ed25519\\s+SHA256:\\S+\\s+e2e@test\\s+just now$`, 'm'),
    );
    expect((await cli(home, ['ssh-key', 'delete', id, ...o])).code).toBe(0);
    expect((await cli(home, ['ssh-key', 'show', ...o])).stdout).not.toMatch(new RegExp(`^\\s*${id}\\s`, 'm'));
    const missing = await cli(home, ['ssh-key', 'add', path.join(home, 'nope.pub'), ...o]);
    expect(missing.code).toBe(2);
    const priv = await cli(home, ['ssh-key', 'add', path.join(home, '.ssh', 'id_ed25519'), ...o]);
    // A private key is a bad argument, like a missing file: a usage error.
    expect(priv.code).toBe(2);
    expect(priv.stderr).toContain('is a private key');
  });

  it('api-key create shows the key once, it works, show lists it, delete revokes it', async () => {
    const home = makeHome();
    const o = ['--url', w.url, '--api-key', key];
    const c = await cli(home, ['api-key', 'create', '--name', 'ci', '--permissions', 'read_only', ...o]);
    expect(c.code).toBe(0);
    const newKey = c.stdout.trim().split('\n').pop()!;
    const id = /API key (\d+) \(ci\) created/.exec(c.stdout)![1]!;
    expect((await cli(home, ['show', 'user', '--url', w.url, '--api-key', newKey])).code).toBe(0);
    const show = await cli(home, ['api-key', 'show', ...o]);
    expect(show.stdout).toMatch(new RegExp(`^\\s*${id}\\s+ci\\s+\\S+…\\s+read_only\\s`, 'm'));
    expect(show.stdout).not.toContain(newKey);
    expect((await cli(home, ['api-key', 'delete', id, ...o])).code).toBe(0);
    const after = await cli(home, ['show', 'user', '--url', w.url, '--api-key', newKey]);
    expect(after.code).toBe(1);
    expect(after.stderr).toContain('Invalid user key');
    expect((await cli(home, ['api-key', 'create', '--permissions', '{bad', ...o])).code).toBe(2);
  });
});
