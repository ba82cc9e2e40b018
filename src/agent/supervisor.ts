// The main process of one instance under the process runtime (docs/agent.md):
// `node supervisor.js INSTANCE_DIR`. It runs detached from the agent, in its own process group,
// so the agent can restart (or be killed) while instances keep running, and re-adopt them.
// It serves the instance's SSH, runs `onstart` once in the background (its exit does not end the
// instance), and lives until SIGTERM. When it dies the instance is `exited`. Under runtype `args`
// it runs the instance's program instead of onstart, and ends when that program ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { serverCopyGrant, serverKeys, type KeyCheck } from './key-check.js';
import { instanceModules } from './rsync-daemon.js';
import { createSshServer } from './ssh-server.js';

export interface SupervisorSpec {
  id: number;
  env: Record<string, string>;
  sshBind: string;
  /** Port to try first (the previous one, so `ssh -p` keeps working across stop/start). */
  sshPortHint: number | null;
  /**
   * Runtype `args`: the program and its arguments, run in place of onstart; when it ends the
   * supervisor ends with its exit code, so the instance is `exited` as a container would be.
   * Empty: nothing to run (there is no image whose defaults could run). Absent: onstart.
   */
  main?: string[] | null;
}

/**
 * What the agent hands the supervisor on its stdin, never in a file: the control server the SSH
 * server asks for the instance's current keys, with the host's key (null: the synced file only).
 */
export interface SupervisorSecrets {
  keyCheck: KeyCheck | null;
}

/** The secrets on stdin (read to its end); none when stdin is no pipe or holds nothing valid. */
function readSecrets(): SupervisorSecrets {
  try {
    const text = readFileSync(0, 'utf8');
    const s = JSON.parse(text) as Partial<SupervisorSecrets>;
    return { keyCheck: s.keyCheck ?? null };
  } catch {
    return { keyCheck: null };
  }
}

export const FILES = {
  spec: 'spec.json',
  keys: 'authorized_keys',
  hostKey: 'ssh_host_ed25519_key',
  root: 'root',
  onstart: 'onstart.sh',
  onstartLog: 'onstart.log',
  log: 'supervisor.log',
  port: 'ssh.port',
  pid: 'main.pid',
  /** The configuration generation the instance's files were made from (absent: 1). */
  generation: 'generation',
} as const;

function main(dir: string): void {
  const log = (msg: string) =>
    appendFileSync(path.join(dir, FILES.log), `${new Date().toISOString()} ${msg}\n`);
  const spec = JSON.parse(readFileSync(path.join(dir, FILES.spec), 'utf8')) as SupervisorSpec;
  const { keyCheck } = readSecrets();
  // Started in a mount namespace of its own (runtime-process supervisorCommand), the instance's
  // files are at /root, where an image keeps its home; elsewhere at their path on the host.
  const root = process.env.OPENRIG_PRIVATE_ROOT === '1' ? '/root' : path.join(dir, FILES.root);
  // OPENRIG_INSTANCE_DIR marks every process of the instance, even one that left the process
  // group (setsid, a pty session): stop finds them by it (runtime-process killStragglers).
  const env = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    ...spec.env,
    HOME: root,
    USER: 'root',
    SHELL: '/bin/sh',
    OPENRIG_INSTANCE_DIR: dir,
  };
  const server = createSshServer({
    hostKey: readFileSync(path.join(dir, FILES.hostKey)),
    authorizedKeysFile: path.join(dir, FILES.keys),
    cwd: root,
    env,
    log,
    currentKeys: keyCheck ? serverKeys(spec.id, keyCheck, log) : undefined,
    // rsync's daemon protocol for `vastai_kaalia` (copies): the instance's root directory.
    rsync: {
      modules: async (access) => instanceModules(spec.id, root, access),
      copyGrant: keyCheck ? serverCopyGrant(spec.id, keyCheck, log) : undefined,
    },
  });

  const listen = (port: number) => server.listen(port, spec.sshBind);
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE' && spec.sshPortHint) {
      log(`port ${spec.sshPortHint} is taken; using a free one`);
      spec.sshPortHint = null;
      listen(0);
      return;
    }
    log(`ssh server failed: ${err.message}`);
    process.exit(1);
  });
  server.on('listening', () => {
    const port = (server.address() as { port: number }).port;
    const tmp = path.join(dir, `${FILES.port}.tmp`);
    writeFileSync(tmp, `${port}\n`);
    renameSync(tmp, path.join(dir, FILES.port)); // atomic: the agent never reads half a number
    log(`ssh listening on ${spec.sshBind}:${port}`);
    if (spec.main) startMain(spec.main);
    else startOnstart();
  });
  listen(spec.sshPortHint ?? 0);

  /** What onstart or the program runs now (null once it ended). */
  let running: ChildProcess | null = null;

  function startOnstart() {
    let script = '';
    try {
      script = readFileSync(path.join(dir, FILES.onstart), 'utf8');
    } catch {
      return;
    }
    if (!script.trim()) return;
    const out = openSync(path.join(dir, FILES.onstartLog), 'a');
    const child = spawn('/bin/sh', [path.join(dir, FILES.onstart)], {
      cwd: root,
      env,
      stdio: ['ignore', out, out],
    });
    running = child;
    child.on('exit', (code, signal) => {
      running = null;
      log(`onstart exited (${signal ?? code})`);
    });
    child.on('error', (err) => log(`onstart failed to start: ${err.message}`));
  }

  function startMain(argv: string[]) {
    if (argv.length === 0) return;
    const out = openSync(path.join(dir, FILES.onstartLog), 'a');
    const child = spawn(argv[0]!, argv.slice(1), { cwd: root, env, stdio: ['ignore', out, out] });
    running = child;
    child.on('exit', (code, signal) => {
      running = null;
      log(
        `main program ${code === 0 ? 'ended' : 'failed'} (${signal ? `signal ${signal}` : `exit code ${code}`})`,
      );
      server.close();
      process.exit(code ?? 1);
    });
    child.on('error', (err) => {
      log(`main program failed to start: ${err.message}`);
      process.exit(127);
    });
  }

  // A stop's SIGTERM reaches the whole group: onstart (or the program) gets it too, and the
  // supervisor waits for it to end, as a container's stop waits for its main process; the agent
  // kills what is left when the grace it gives runs out (a preempted instance's grace period).
  const stop = (sig: string) => {
    log(`${sig}: stopping`);
    server.close();
    if (!running || running.exitCode !== null || running.signalCode !== null) process.exit(0);
    running.once('exit', () => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => {}); // the agent's terminal going away must not end the instance
}

const dir = process.argv[2];
if (dir && process.argv[1] && /supervisor\.(js|ts)$/.test(process.argv[1])) main(path.resolve(dir));
