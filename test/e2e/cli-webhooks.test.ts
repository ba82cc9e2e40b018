// The webhook commands as a subprocess against a real server: `webhook create URL --events
// 'instance.*'` prints the secret once, `show webhooks` lists it, `webhook test ID` reaches the
// receiver signed with that secret, and `show events --follow` prints new events as they happen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { cli, createUser, makeHome, startWorld, type CliWorld } from './cli-harness.js';
import { startProc, waitFor } from '../helpers/process.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let w: CliWorld;
let rx: Receiver;
let key: string;

beforeAll(async () => {
  rx = await startReceiver();
  w = await startWorld({
    OPENRIG_WEBHOOK_ALLOW_HTTP: '1',
    OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32',
    OPENRIG_WEBHOOK_POLL_MS: '50',
  });
  key = (await createUser(w, 'cli-hooks@example.com')).api_key;
});
afterAll(async () => {
  w?.stop();
  await rx?.close();
});

describe('webhook commands', { timeout: 90_000 }, () => {
  it('create, show, test: the delivery verifies with the secret printed once', async () => {
    const home = makeHome();
    const auth = ['--url', w.url, '--api-key', key];
    const c = await cli(home, [
      'webhook',
      'create',
      `${rx.url}/cli`,
      '--events',
      'instance.*',
      'tfa.locked',
      ...auth,
    ]);
    expect(c.code, c.stderr).toBe(0);
    const secret = /^(whsec_\S+)$/m.exec(c.stdout)?.[1];
    expect(secret).toBeDefined();
    const id = Number(/Webhook (\d+) created/.exec(c.stdout)?.[1]);
    const s = await cli(home, ['show', 'webhooks', ...auth]);
    expect(s.code).toBe(0);
    expect(s.stdout).toContain(`${rx.url}/cli`);
    expect(s.stdout).toContain('instance.*,tfa.locked');
    expect(s.stdout).not.toContain('whsec_');
    const t = await cli(home, ['webhook', 'test', String(id), ...auth]);
    expect(t.code, t.stderr).toBe(0);
    const got = await waitFor(() => rx.received.find((r) => r.path === '/cli'), 'the test delivery', 20_000);
    expect(new Webhook(secret!).verify(got.body, got.headers)).toMatchObject({ type: 'webhook.test' });
    const bad = await cli(home, ['webhook', 'create', 'ftp://example.com/', ...auth]);
    expect(bad.code).toBe(1);
  });

  it('show events --follow prints events as they are recorded', async () => {
    const home = makeHome();
    const p = startProc(
      ['show', 'events', '--follow', '--interval', '0.2', '--url', w.url, '--api-key', key],
      {
        HOME: home,
        XDG_CONFIG_HOME: '',
        OPENRIG_URL: '',
        OPENRIG_API_KEY: '',
      },
    );
    try {
      await new Promise((r) => setTimeout(r, 1000));
      const k = await fetch(`${w.url}/api/v0/auth/apikeys/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'followed' }),
      });
      expect(k.status).toBe(200);
      await waitFor(
        () => /api_key\.created\s+evt_\S+\s+.*name=followed/.test(p.stdout()),
        'the followed event',
        20_000,
      );
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });
});
