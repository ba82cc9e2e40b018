// The host's key never reaches an instance of the process runtime: its SSH server still asks the
// control server with it (so the supervisor has it), yet no file of the instance's tree and no
// environment of its processes holds it. Uses the built supervisor (dist/agent/supervisor.js).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ProcessRuntime } from './runtime-process.js';

const SECRET = 'ork_host_secret_0123456789abcdef';

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const n of readdirSync(dir)) {
    const p = path.join(dir, n);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...filesUnder(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

const noSsh = existsSync('/usr/bin/ssh')
  ? null
  : 'no OpenSSH client at /usr/bin/ssh (Debian package openssh-client)';
if (noSsh) console.log(`process runtime SSH login tests skipped: ${noSsh}`);

describe.skipIf(noSsh !== null)('process runtime: the host key stays out of instances', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-rt-secrets-'));
  const keyFile = path.join(dir, 'id_ed25519');
  const seen: string[] = [];
  let pub = '';
  let server: http.Server;
  let rt: ProcessRuntime;
  const saved = process.env.OPENRIG_API_KEY;

  beforeAll(async () => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter', '-f', keyFile]);
    pub = readFileSync(`${keyFile}.pub`, 'utf8').trim();
    server = http.createServer((req, res) => {
      seen.push(String(req.headers.authorization));
      req.resume();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ authorized_keys: [pub] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    rt = new ProcessRuntime({
      stateDir: path.join(dir, 'state'),
      sshBind: '127.0.0.1',
      stopGraceMs: 2000,
      keyCheck: { server: url, apiKey: SECRET },
    });
  });

  afterAll(async () => {
    for (const id of await rt.list()) await rt.destroy(id);
    server.close();
    if (saved === undefined) delete process.env.OPENRIG_API_KEY;
    else process.env.OPENRIG_API_KEY = saved;
    rmSync(dir, { recursive: true, force: true });
  });

  it('is in no file of the instance, in no environment of its processes, and the SSH server still uses it', async () => {
    // The agent got its key from its environment, as `openrig agent` usually does.
    process.env.OPENRIG_API_KEY = SECRET;
    const { sshPort } = await rt.start({
      id: 1,
      image: 'ubuntu',
      disk: 1,
      onstart: 'sleep 300',
      env: { CONTAINER_API_KEY: 'ori_own_key' },
      authorizedKeys: [pub],
    });
    // Asynchronous: this process answers the SSH server's key check meanwhile.
    const ssh = (cmd: string) =>
      new Promise<{ status: number; stdout: string }>((resolve) =>
        execFile(
          'ssh',
          [
            ...['-i', keyFile, '-p', String(sshPort), '-o', 'StrictHostKeyChecking=no'],
            ...['-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR'],
            'root@127.0.0.1',
            cmd,
          ],
          { encoding: 'utf8', timeout: 15_000 },
          (err, stdout) => resolve({ status: err ? Number(err.code) || 1 : 0, stdout }),
        ),
      );
    const r = await ssh(
      'cat ../* 2>/dev/null; cat /proc/$PPID/environ /proc/$$/environ 2>/dev/null | tr "\\0" "\\n"; echo done',
    );
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('done');
    expect(r.stdout).toContain('CONTAINER_API_KEY=ori_own_key');
    expect(r.stdout).not.toContain(SECRET);
    for (const f of filesUnder(rt.dir(1))) expect(readFileSync(f, 'utf8'), f).not.toContain(SECRET);
    const pid = Number(readFileSync(path.join(rt.dir(1), 'main.pid'), 'utf8'));
    expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(SECRET);
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(SECRET);
    // The SSH server asked the control server with the host's key before letting the renter in.
    expect(seen).toContain(`Bearer ${SECRET}`);
  }, 30_000);
});
