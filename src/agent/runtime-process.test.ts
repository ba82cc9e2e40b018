// The process runtime with real processes and the system's OpenSSH client.
// Uses the built supervisor (dist/agent/supervisor.js; `npm test` builds first).
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isMainProcess, privateRootFlags } from './runtime-process.js';
import type { InstanceSpec } from './runtime.js';
import { pollUntil as waitFor } from '../../test/helpers/poll.js';
import { useProcessRuntime } from '../../test/helpers/process-runtime.js';

const { dir, rt } = useProcessRuntime('main');
let pub = '';
const keyFile = path.join(dir, 'id_ed25519');

function ssh(port: number, cmd: string, key = keyFile) {
  return spawnSync(
    'ssh',
    [
      '-i',
      key,
      '-p',
      String(port),
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'LogLevel=ERROR',
      'root@127.0.0.1',
      cmd,
    ],
    { encoding: 'utf8', timeout: 15_000 },
  );
}

beforeAll(() => {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter', '-f', keyFile]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'stranger', '-f', `${keyFile}.other`]);
  pub = readFileSync(`${keyFile}.pub`, 'utf8').trim();
});

const spec = (id: number, over: Partial<InstanceSpec> = {}): InstanceSpec => ({
  id,
  image: 'ubuntu',
  disk: 1,
  onstart: 'echo "$CONTAINER_API_KEY $FOO" > onstart.out; sleep 300',
  env: { FOO: 'bar', CONTAINER_API_KEY: 'ori_test' },
  authorizedKeys: [pub],
  ...over,
});

describe.skipIf(!existsSync('/usr/bin/ssh'))('process runtime', () => {
  it('runs an instance: main.pid, onstart with its env in the background, SSH with exactly the given keys, exit codes', async () => {
    expect(await rt.inspect(1)).toEqual({ state: 'absent' });
    const { sshPort } = await rt.start(spec(1));
    const st = await rt.inspect(1);
    expect(st).toEqual({ state: 'running', sshPort, generation: 1 });
    const pid = Number(readFileSync(path.join(rt.dir(1), 'main.pid'), 'utf8'));
    expect(isMainProcess(pid, rt.dir(1))).toBe(true);

    const r = ssh(sshPort, 'echo hello-from-instance; pwd; echo "$FOO"');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(
      `hello-from-instance\n${privateRootFlags() ? '/root' : path.join(rt.dir(1), 'root')}\nbar\n`,
    );
    expect(ssh(sshPort, 'exit 7').status).toBe(7);
    const out = await waitFor(
      () =>
        existsSync(path.join(rt.dir(1), 'root/onstart.out'))
          ? readFileSync(path.join(rt.dir(1), 'root/onstart.out'), 'utf8')
          : '',
      (s) => s !== '',
    );
    expect(out).toBe('ori_test bar\n');

    // An interactive shell with a terminal (ssh -tt), in the instance's directory.
    const tty = spawnSync(
      'ssh',
      [
        '-tt',
        '-i',
        keyFile,
        '-p',
        String(sshPort),
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'BatchMode=yes',
        '-o',
        'LogLevel=ERROR',
        'root@127.0.0.1',
      ],
      { input: 'echo "answer=$((6*7))"; pwd\nexit\n', encoding: 'utf8', timeout: 15_000 },
    );
    expect(tty.stdout).toContain('answer=42');
    expect(tty.stdout).toContain(privateRootFlags() ? '/root' : path.join(rt.dir(1), 'root'));

    const stranger = ssh(sshPort, 'echo no', `${keyFile}.other`);
    expect(stranger.status).not.toBe(0);
    expect(stranger.stdout).toBe('');
    // A key attached later works at once.
    await rt.updateKeys(1, [pub, readFileSync(`${keyFile}.other.pub`, 'utf8')]);
    expect(ssh(sshPort, 'echo yes', `${keyFile}.other`).stdout).toBe('yes\n');
  });

  it('stop ends the whole process tree and the SSH server and keeps the files; start brings it back on the same port', async () => {
    // A process that leaves the process group (setsid) is still the instance's.
    const { sshPort } = await rt.start(spec(2, { onstart: 'setsid sleep 4343 & sleep 300' }));
    ssh(sshPort, 'echo kept > file.txt');
    await waitFor(
      () => spawnSync('pgrep', ['-f', 'sleep 4343']).status,
      (c) => c === 0,
    );
    const pid = Number(readFileSync(path.join(rt.dir(2), 'main.pid'), 'utf8'));
    await rt.stop(2);
    expect(await rt.inspect(2)).toEqual({ state: 'stopped', generation: 1 });
    expect(isMainProcess(pid, rt.dir(2))).toBe(false);
    // onstart's `sleep 300` was in the tree: nothing of the instance is left.
    const left = spawnSync('ps', ['-o', 'pid=,stat=,comm=', '-g', String(pid)], { encoding: 'utf8' });
    // Zombies are dead, waiting for init to reap them; nothing else may be left.
    expect(left.stdout.split('\n').filter((l) => l.trim() && !/^\s*\d+\s+Z/.test(l))).toEqual([]);
    expect(spawnSync('pgrep', ['-f', 'sleep 4343'], { encoding: 'utf8' }).stdout.trim()).toBe('');
    expect(ssh(sshPort, 'echo up').status).not.toBe(0);
    expect(readFileSync(path.join(rt.dir(2), 'root/file.txt'), 'utf8')).toBe('kept\n');
    const again = await rt.start(spec(2));
    expect(again.sshPort).toBe(sshPort);
    expect(ssh(again.sshPort, 'cat file.txt').stdout).toBe('kept\n');
  });

  it('a main process that dies makes the instance exited; destroy removes everything', async () => {
    await rt.start(spec(3));
    const pid = Number(readFileSync(path.join(rt.dir(3), 'main.pid'), 'utf8'));
    process.kill(pid, 'SIGKILL');
    const st = await waitFor(
      () => rt.inspect(3),
      (s) => s.state === 'exited',
    );
    expect(st.state).toBe('exited');
    await rt.destroy(3);
    expect(existsSync(rt.dir(3))).toBe(false);
    expect(await rt.inspect(3)).toEqual({ state: 'absent' });
    expect(await rt.list()).not.toContain(3);
  });

  it("each instance has its own home and working directory: ~ in onstart and in an SSH session is the instance's root, never the host user's home", async () => {
    const a = await rt.start(spec(4, { onstart: 'echo four > ~/mine.txt; pwd > ~/cwd.txt; sleep 300' }));
    const b = await rt.start(spec(5, { onstart: 'echo five > ~/mine.txt; sleep 300' }));
    const rootOf = (id: number) => path.join(rt.dir(id), 'root');
    const read = (id: number, f: string) =>
      existsSync(path.join(rootOf(id), f)) ? readFileSync(path.join(rootOf(id), f), 'utf8') : '';
    await waitFor(
      async () => read(4, 'cwd.txt') + read(5, 'mine.txt'),
      (t) => t.includes('\n') && t.endsWith('five\n'),
    );
    // In a mount namespace of its own the instance's root is /root, as in an image; elsewhere
    // it is the directory's path on the host.
    const home = privateRootFlags() ? '/root' : rootOf(4);
    expect(read(4, 'mine.txt')).toBe('four\n');
    expect(read(4, 'cwd.txt')).toBe(`${home}\n`);
    expect(read(5, 'mine.txt')).toBe('five\n');
    // A login lands there too, and `cd` with no argument goes back there.
    const r = ssh(a.sshPort, 'cd /tmp && cd && pwd && echo "$HOME"');
    expect(r.stdout).toBe(`${home}\n${home}\n`);
    expect(ssh(b.sshPort, 'cat ~/mine.txt').stdout).toBe('five\n');
    await rt.destroy(4);
    await rt.destroy(5);
  });

  const noNamespace = privateRootFlags() === null;
  if (noNamespace)
    console.log("skipped: this host allows no mount namespace (unshare), so /root is the host's");
  it.skipIf(noNamespace)(
    "an onstart or a login that writes to /root writes into the instance, never into the host's /root",
    async () => {
      const mark = `openrig-private-root-${process.pid}-${Date.now()}.txt`;
      const a = await rt.start(spec(6, { onstart: `echo six > /root/${mark}; sleep 300` }));
      const inside = path.join(rt.dir(6), 'root', mark);
      await waitFor(
        async () => (existsSync(inside) ? readFileSync(inside, 'utf8') : ''),
        (t) => t === 'six\n',
      );
      expect(ssh(a.sshPort, `cat /root/${mark} && echo login > /root/login-${mark}`).stdout).toBe('six\n');
      expect(existsSync(path.join(rt.dir(6), 'root', `login-${mark}`))).toBe(true);
      expect(existsSync(path.join('/root', mark))).toBe(false);
      expect(existsSync(path.join('/root', `login-${mark}`))).toBe(false);
      await rt.destroy(6);
    },
  );
});
