// `openrig serve` and `openrig admin` as real processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { ed25519KeyPair } from '../../src/contract/ssh-keygen.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDb, pgUnavailable, type TestDb } from '../helpers/db.js';
import { runCli, startProc, startServe, waitFor } from '../helpers/process.js';

const SECRET = { OPENRIG_SECRET_KEY: 'cd'.repeat(32) };

describe('serve on SQLite (the embedded default)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-e2e-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers /healthz, lets admin create users while it runs, and never logs a key', async () => {
    const s = await startServe(['--data', dir], SECRET);
    const created = await runCli(
      [
        'admin',
        'create-user',
        '--data',
        dir,
        '--email',
        'ops@example.com',
        '--email-verified',
        '--balance',
        '5',
      ],
      SECRET,
    );
    expect(created.code).toBe(0);
    const user = JSON.parse(created.stdout);
    expect(user).toMatchObject({ email: 'ops@example.com' });
    expect(user.api_key).toMatch(/^or_/);
    const me = await fetch(`${s.url}/api/v0/users/current?api_key=${user.api_key}`);
    expect(me.status).toBe(200);
    expect(me.headers.get('content-type')).toBe('application/json');
    expect(((await me.json()) as any).balance).toBe(5);
    await fetch(`${s.url}/api/v0/users/current`, { headers: { authorization: `Bearer ${user.api_key}` } });
    await fetch(`${s.url}/api/v0/users/current?api_key=or_wrongkey123`);
    const flagged = await runCli(
      ['admin', 'flag-sms-fraud', '--data', dir, '--email', 'ops@example.com'],
      SECRET,
    );
    expect(JSON.parse(flagged.stdout)).toEqual({ id: user.id, sms_fraud: true });
    const cleared = await runCli(
      ['admin', 'flag-sms-fraud', '--data', dir, '--email', 'ops@example.com', '--clear'],
      SECRET,
    );
    expect(JSON.parse(cleared.stdout).sms_fraud).toBe(false);

    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    const logs = s.stdout() + s.stderr();
    expect(logs).toContain('"reqId"'); // structured request logs were written
    expect(logs).not.toContain(user.api_key);
    expect(logs).not.toContain('or_wrongkey123');
  });

  it('takes its address and data directory from OPENRIG_PORT and OPENRIG_DATA unless flags are given', async () => {
    const freePort = () =>
      new Promise<number>((resolve) => {
        const srv = http.createServer().listen(0, '127.0.0.1', () => {
          const { port } = srv.address() as { port: number };
          srv.close(() => resolve(port));
        });
      });
    const [envPort, flagPort] = [await freePort(), await freePort()];
    const envData = path.join(dir, 'from-env');
    const byEnv = startProc(['serve', '--workers', '1'], {
      ...SECRET,
      OPENRIG_PORT: String(envPort),
      OPENRIG_DATA: envData,
    });
    try {
      await waitFor(
        () => /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(byEnv.stdout())?.[1],
        'serve to listen',
      );
      expect(byEnv.stdout()).toContain(`listening on http://127.0.0.1:${envPort}`);
      expect((await fetch(`http://127.0.0.1:${envPort}/healthz`)).status).toBe(200);
      expect(existsSync(path.join(envData, 'openrig.db'))).toBe(true);
    } finally {
      byEnv.child.kill('SIGTERM');
      await byEnv.exited;
    }
    // A flag wins over the variable.
    const byFlag = startProc(['serve', '--workers', '1', '--port', String(flagPort), '--data', envData], {
      ...SECRET,
      OPENRIG_PORT: String(envPort),
    });
    try {
      await waitFor(() => /listening on/.exec(byFlag.stdout()), 'serve to listen');
      expect(byFlag.stdout()).toContain(`listening on http://127.0.0.1:${flagPort}`);
    } finally {
      byFlag.child.kill('SIGTERM');
      await byFlag.exited;
    }
  });

  it('admin create-user refuses a duplicate e-mail with exit 1 and a message', async () => {
    const a = await runCli(['admin', 'create-user', '--data', dir, '--email', 'dup@example.com'], SECRET);
    expect(a.code).toBe(0);
    const b = await runCli(['admin', 'create-user', '--data', dir, '--email', 'dup@example.com'], SECRET);
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(/already exists/);
  });

  it('SIGTERM lets an in-flight request finish, then exits 0', async () => {
    const s = await startServe(['--data', dir], SECRET);
    const user = JSON.parse(
      (
        await runCli(
          ['admin', 'create-user', '--data', dir, '--email', `drain${Date.now()}@example.com`],
          SECRET,
        )
      ).stdout,
    );
    const body = JSON.stringify({ ssh_key: ed25519KeyPair().public });
    const u = new URL(`${s.url}/api/v0/ssh/`);
    const reply = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            authorization: `Bearer ${user.api_key}`,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      // Half the body now, SIGTERM, the rest a moment later: the request is in flight throughout.
      req.write(body.slice(0, 20));
      setTimeout(() => {
        s.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(20)), 300);
      }, 100);
    });
    const r = await reply;
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).fingerprint).toMatch(/^SHA256:/);
    expect((await s.exited).code).toBe(0);
  });
});

const pgSkip = await pgUnavailable();

describe.skipIf(pgSkip !== null)('two serve processes on one PostgreSQL database', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb('postgres');
  });
  afterAll(async () => db?.cleanup());

  it('both answer, and a key revoked through one is refused by the other at once', async () => {
    const env = { ...SECRET, DATABASE_URL: db.url };
    const [a, b] = await Promise.all([
      startServe(['--data', db.dataDir], env),
      startServe(['--data', db.dataDir], env),
    ]);
    const created = await runCli(
      ['admin', 'create-user', '--database-url', db.url, '--email', 'pg@example.com'],
      SECRET,
    );
    expect(created.code).toBe(0);
    const user = JSON.parse(created.stdout);
    const auth = { authorization: `Bearer ${user.api_key}`, 'content-type': 'application/json' };
    const k = (await (
      await fetch(`${a.url}/api/v0/auth/apikeys/`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: 'shared' }),
      })
    ).json()) as any;
    const viaB = await fetch(`${b.url}/api/v0/users/current`, {
      headers: { authorization: `Bearer ${k.key}` },
    });
    expect(viaB.status).toBe(200);
    const del = await fetch(`${b.url}/api/v0/auth/apikeys/${k.id}/`, {
      method: 'DELETE',
      headers: auth,
      body: '{}',
    });
    expect(del.status).toBe(200);
    const viaA = await fetch(`${a.url}/api/v0/users/current`, {
      headers: { authorization: `Bearer ${k.key}` },
    });
    expect(viaA.status).toBe(401);
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect((await a.exited).code).toBe(0);
    expect((await b.exited).code).toBe(0);
  });
});
