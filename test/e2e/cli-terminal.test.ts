// The CLI as a person meets it, against `openrig serve --demo` (a fleet with agents over loopback
// and a registered demo key): in a pseudo-terminal (`script`) and in pipes. Tables fit the
// terminal, waits redraw a live line and back off, ssh works with no options, usage errors read
// alike and exit 2, a closed pipe is quiet.
/* eslint-disable no-control-regex -- terminal escape codes are what these tests look for */
import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, callApi, startServe, type Proc } from '../helpers/process.js';
import { cli, hasCommand, hasStack } from './cli-harness.js';

const hasScript = hasCommand('script', ['--version']);
const hasSsh = hasCommand('ssh', ['-V']);
const hasFish = hasCommand('fish', ['--version']);
const hasZsh = hasCommand('zsh', ['--version']);
if (!hasScript)
  console.warn('[openrig tests] `script` (util-linux) is missing: the pseudo-terminal cases are skipped');

let server: Proc & { url: string };
let data: string;
let home: string;
let key: string;
let run: (args: string[], env?: Record<string, string>) => ReturnType<typeof cli>;

/** Runs the CLI in a pseudo-terminal COLS wide; the transcript as the terminal received it. */
function inPty(
  args: string[],
  cols = 80,
  env: Record<string, string> = {},
): Promise<{ out: string; code: number }> {
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve) => {
    const child = spawn(
      'script',
      ['-qec', `stty cols ${cols}; ${process.execPath} ${BIN} ${quoted}`, '/dev/null'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          HOME: home,
          XDG_CONFIG_HOME: '',
          OPENRIG_URL: server.url,
          OPENRIG_API_KEY: key,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ out, code: code ?? -1 }));
  });
}

/** The lines a terminal shows: carriage-return redraws and erase codes resolved to the last text. */
function screenLines(out: string): string[] {
  return out
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((l) =>
      l
        .split('\r')
        .at(-1)!
        .replace(/\u001b\[[0-9;]*[A-Za-z]/g, ''),
    );
}

beforeAll(async () => {
  data = mkdtempSync(path.join(tmpdir(), 'openrig-cli-terminal-'));
  server = await startServe(['--data', data, '--demo'], {
    OPENRIG_LOG_LEVEL: 'warn',
    OPENRIG_RATE_LIMITS: 'off',
  });
  key = /demo API key: (\S+)/.exec(server.stdout())![1]!;
  home = mkdtempSync(path.join(tmpdir(), 'openrig-cli-terminal-home-'));
  run = (args, env = {}) => cli(home, args, { OPENRIG_URL: server.url, OPENRIG_API_KEY: key, ...env });
}, 90_000);
afterAll(async () => {
  if (!server) return;
  // Each instance's supervisor is its own process and outlives the server: destroy them first.
  const list = await callApi(server.url, 'GET', '/api/v0/instances/', key);
  for (const i of (list.body as { instances: { id: number }[] }).instances)
    await callApi(server.url, 'DELETE', `/api/v0/instances/${i.id}/`, key);
  // The demo agents destroy them on their next sync, removing each instance's directory.
  const agents = path.join(data, 'demo', 'agents');
  const left = () =>
    existsSync(agents)
      ? readdirSync(agents).flatMap((a) =>
          existsSync(path.join(agents, a, 'instances')) ? readdirSync(path.join(agents, a, 'instances')) : [],
        )
      : [];
  for (const until = Date.now() + 30_000; left().length > 0 && Date.now() < until;)
    await new Promise((r) => setTimeout(r, 100));
  server.child.kill('SIGTERM');
}, 60_000);

describe('usage and version', () => {
  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await run(['--version']);
    expect([r.code, r.stdout]).toEqual([0, `${pkg.version}\n`]);
  });

  it("commander's errors, a malformed query and an API path in --url: `openrig: …`, exit 2", async () => {
    const unknown = await run(['show', 'instances', '--bogus']);
    expect([unknown.code, unknown.stderr]).toEqual([2, "openrig: unknown option '--bogus'\n"]);
    const typo = await run(['shw']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^openrig: unknown command 'shw'/);
    const q = await run(['search', 'offers', 'num_gpus>>2']);
    expect(q.code).toBe(2);
    expect(q.stderr).toContain('"num_gpus>>…": one operator per term');
    const url = await run(['show', 'instances', '--url', `${server.url}/api/v0`]);
    expect(url.code).toBe(2);
    expect(url.stderr).toContain(`use ${server.url} instead of ${server.url}/api/v0`);
    for (const r of [unknown, typo, q, url]) expect(hasStack(r.stderr)).toBe(false);
  });

  it('a closed pipe (| head -1) ends quietly, exit 0', async () => {
    const r = execFileSync(
      'sh',
      ['-c', `node ${BIN} search offers --limit 50 2>&1 | head -1; echo "rc=\${PIPESTATUS:-0}"`],
      {
        cwd: ROOT,
        env: { ...process.env, HOME: home, OPENRIG_URL: server.url, OPENRIG_API_KEY: key },
      },
    ).toString();
    expect(r).toMatch(/^ID\s+GPUs/);
    expect(r).not.toMatch(/EPIPE|Error|at /);
  });
});

describe('tables fit the terminal', () => {
  it.runIf(hasScript)(
    '80 columns: every line fits; --wide prints all columns; a pipe gets all columns',
    async () => {
      const narrow = await inPty(['search', 'offers'], 80);
      const lines = screenLines(narrow.out).filter((l) => l.trim() !== '');
      expect(lines[0]).toMatch(/^ID\s+GPUs/);
      for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(80);
      expect(lines[0]).toContain('$/hr');
      const wide = screenLines((await inPty(['search', 'offers', '--wide'], 80)).out);
      expect(wide[0]).toContain('Location');
      expect(wide[0]!.length).toBeGreaterThan(80);
      const piped = await run(['search', 'offers']);
      expect(piped.stdout.split('\n')[0]).toContain('Location');
      expect(piped.stdout).not.toMatch(/\u001b/);
      // The other tables too, at 50 columns.
      for (const args of [
        ['ssh-key', 'show'],
        ['api-key', 'show'],
      ]) {
        const shown = screenLines((await inPty(args, 50)).out).filter((l) => l.trim() !== '');
        expect(shown.length, args.join(' ')).toBeGreaterThan(1);
        for (const l of shown) expect([...l].length, l).toBeLessThanOrEqual(50);
      }
    },
  );
});

describe('create --wait, stop/start --wait, ssh with no options', () => {
  let id: number;
  it.runIf(hasScript)(
    'create --wait in a terminal redraws one live line, then prints how to connect',
    async () => {
      const offer = (await run(['search', 'offers', 'gpu_name=RTX_3090', '--raw'])).stdout;
      const offerId = (JSON.parse(offer) as { offers: { id: number }[] }).offers[0]!.id;
      const r = await inPty([
        'create',
        'instance',
        String(offerId),
        '--image',
        'ubuntu:22.04',
        '--disk',
        '10',
        '--wait',
      ]);
      expect(r.code, r.out).toBe(0);
      id = Number(/Created instance (\d+)/.exec(r.out)![1]);
      // Redrawn in place (carriage returns), with the state and the elapsed time.
      expect(r.out).toMatch(new RegExp(`\\r\\u001b\\[2K[|/\\\\-] instance ${id}: \\w+.*\\(\\d+s\\)`));
      expect(r.out).toMatch(/is running \(after \d+s\)\. Connect with:/);
      expect(r.out).toContain(`(or: openrig ssh ${id})`);
    },
  );

  it('stop --wait and start --wait in a pipe: plain lines on stderr, no redraws; a repeat says so', async () => {
    if (!id) return;
    const stop = await run(['stop', 'instance', String(id), '--wait']);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(
      new RegExp(`instance ${id}: stopping\\ninstance ${id} is stopped \\(after \\d+s\\)\\n`),
    );
    expect(stop.stderr).not.toMatch(/\r|\u001b/);
    expect((await run(['stop', 'instance', String(id)])).stdout).toBe(`instance ${id} is already stopped\n`);
    // A stopped instance cannot be reached: no SSH address in the list or the detail.
    const rows = (await run(['show', 'instances'])).stdout.split('\n');
    const header = rows[0]!;
    const row = rows.find((l) => new RegExp(`^\\s*${id}\\s`).test(l))!;
    expect(row).toMatch(/\sstopped\s/);
    expect(row.slice(header.indexOf('SSH')).split(/\s+/)[0]).toBe('-');
    expect(row).not.toMatch(/127\.0\.0\.1:\d+/);
    expect((await run(['show', 'instance', String(id)])).stdout).toMatch(/^SSH:\s+-$/m);
    const start = await run(['start', 'instance', String(id), '--wait', '--timeout', '60']);
    expect(start.code, start.stderr).toBe(0);
    expect(start.stdout).toMatch(/is running \(after \d+s\)/);
    expect(start.stderr).toMatch(new RegExp(`^instance ${id}: `, 'm'));
    expect((await run(['start', 'instance', String(id)])).stdout).toBe(`instance ${id} is already running\n`);
  }, 90_000);

  it.runIf(hasSsh)(
    'ssh picks the registered key, accepts the host key into its own known_hosts, passes the exit code, refuses a changed key',
    async () => {
      if (!id) return;
      // The demo key under a name ssh does not try by itself.
      mkdirSync(path.join(home, '.ssh'), { recursive: true, mode: 0o700 });
      const demoKey = path.join(data, 'demo', 'id_ed25519');
      copyFileSync(demoKey, path.join(home, '.ssh', 'work'));
      copyFileSync(`${demoKey}.pub`, path.join(home, '.ssh', 'work.pub'));
      execFileSync('chmod', ['600', path.join(home, '.ssh', 'work')]);
      const hello = await run(['ssh', String(id), '--', 'echo', 'hello-from-instance']);
      expect(hello.stdout, hello.stderr).toBe('hello-from-instance\n');
      expect(hello.code).toBe(0);
      const known = path.join(home, '.config', 'openrig', 'known_hosts');
      expect(existsSync(known)).toBe(true);
      // Filed under the server and instance (ssh may hash the name): ssh-keygen -F finds it.
      const alias = `openrig-${new URL(server.url).host.replace(/[^A-Za-z0-9.-]/g, '-')}-instance-${id}`;
      expect(execFileSync('ssh-keygen', ['-F', alias, '-f', known]).toString()).toContain('ssh-ed25519');
      expect((await run(['ssh', String(id), '--', 'exit', '3'])).code).toBe(3);
      // The Connect line names the key, since ssh would not find it alone.
      const w = await run(['wait', String(id)]);
      expect(w.stdout).toContain(`ssh -i ~/.ssh/work -p`);
      // Another key for the same instance: refused, with how to forget the old one.
      const other = execFileSync(
        'ssh-keygen',
        ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(home, 'x')],
        {
          input: 'y\n',
        },
      );
      void other;
      const forged = readFileSync(path.join(home, 'x.pub'), 'utf8').split(' ').slice(0, 2).join(' ');
      writeFileSync(known, readFileSync(known, 'utf8').replace(/ ssh-\S+ \S+/, ` ${forged}`));
      const refused = await run(['ssh', String(id), '--', 'true']);
      expect(refused.code).toBe(255);
      expect(refused.stderr).toContain(
        `openrig: refused: instance ${id}'s host key is not the one it had on first use`,
      );
      expect(refused.stderr).toContain('ssh-keygen -R openrig-');
    },
    60_000,
  );

  it.runIf(hasSsh)(
    "login in the demo's directory remembers the demo key; ssh then works anywhere, with the key the instance accepts",
    async () => {
      if (!id) return;
      const home2 = mkdtempSync(path.join(tmpdir(), 'openrig-cli-terminal-home2-'));
      const demoDir = mkdtempSync(path.join(tmpdir(), 'openrig-demo-cwd-'));
      symlinkSync(data, path.join(demoDir, 'data'));
      const env = { ...process.env, HOME: home2, XDG_CONFIG_HOME: '', OPENRIG_URL: '', OPENRIG_API_KEY: '' };
      const login = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const c = spawn(process.execPath, [BIN, 'login', '--url', server.url, '--api-key', key], {
          cwd: demoDir,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        c.stdout.on('data', (d) => (out += d));
        c.on('exit', (code) => resolve({ code, out }));
      });
      expect(login.code).toBe(0);
      const demoKey = path.join(demoDir, 'data', 'demo', 'id_ed25519');
      expect(login.out).toContain(`openrig ssh logs in with ${demoKey} (registered on the account)`);
      const as2 = (args: string[]) => cli(home2, args);
      expect((await as2(['ssh', String(id), '--', 'echo', 'anywhere'])).stdout).toBe('anywhere\n');
      // A key registered after the instance was made is on the account but not on the instance:
      // ssh still picks the demo key, the one the instance accepts.
      mkdirSync(path.join(home2, '.ssh'), { mode: 0o700 });
      execFileSync('ssh-keygen', [
        '-q',
        '-t',
        'ed25519',
        '-N',
        '',
        '-f',
        path.join(home2, '.ssh', 'id_ed25519'),
      ]);
      const added = await as2(['ssh-key', 'add']);
      expect(added.code, added.stderr).toBe(0);
      const later = await as2(['ssh', String(id), '--', 'echo', 'still-in']);
      expect([later.code, later.stdout]).toEqual([0, 'still-in\n']);
      const keyId = /Added SSH key: (\d+)/.exec(added.stdout)![1]!;
      expect((await as2(['ssh-key', 'delete', keyId])).code).toBe(0);
    },
    60_000,
  );

  it('Ctrl-C while waiting leaves the instance and says how to resume', async () => {
    if (!id) return;
    expect((await run(['stop', 'instance', String(id), '--wait'])).code).toBe(0);
    const child = spawn(process.execPath, [BIN, 'start', 'instance', String(id), '--wait'], {
      cwd: ROOT,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: '', OPENRIG_URL: server.url, OPENRIG_API_KEY: key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    let out = '';
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => (out += d));
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        // Polling has begun (its first line is on stderr): the wait owns Ctrl-C now.
        if (new RegExp(`instance ${id}: `).test(err)) {
          clearInterval(t);
          child.kill('SIGINT');
          resolve();
        }
      }, 10);
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    if (/is running/.test(out)) return; // it ran before the signal: nothing to interrupt
    expect(code).toBe(130);
    expect(err).toContain(`was left as it is (resume with: openrig wait ${id})`);
    expect((await run(['show', 'instance', String(id)])).code).toBe(0);
  }, 60_000);
});

describe('reboot and recycle --wait', () => {
  let id: number;
  /** The demo agent's directory of instance `n` (process runtime). */
  const instanceDir = (n: number) => {
    const agents = path.join(data, 'demo', 'agents');
    for (const a of readdirSync(agents)) {
      const d = path.join(agents, a, 'instances', String(n));
      if (existsSync(d)) return d;
    }
    throw new Error(`no directory for instance ${n}`);
  };
  const inInstance = (cmd: string) =>
    run(['ssh', String(id), '--', cmd], { OPENRIG_SSH_KEY: path.join(data, 'demo', 'id_ed25519') });

  beforeAll(async () => {
    const offers = JSON.parse((await run(['search', 'offers', 'gpu_name=RTX_4090', '--raw'])).stdout) as {
      offers: { id: number }[];
    };
    const c = await run([
      'create',
      'instance',
      String(offers.offers[0]!.id),
      '--image',
      'ubuntu:22.04',
      '--wait',
    ]);
    expect(c.code, c.stderr).toBe(0);
    id = Number(/Created instance (\d+)/.exec(c.stdout)![1]);
    if (hasSsh) await inInstance('echo kept > kept.txt');
  }, 60_000);
  afterAll(async () => {
    if (id) await run(['destroy', 'instance', String(id)]);
  });

  it('in a pipe: requested, each state change a line (loading with why), then running again', async () => {
    const r = await run(['reboot', 'instance', String(id), '--wait', '--timeout', '60']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^instance ${id}: reboot requested\\ninstance ${id} is rebooted and running again \\(after \\d+s\\)\\. Connect with:\\n  ssh `,
      ),
    );
    // The first state seen is the request, or already the host's step (the host is woken at once).
    expect(r.stderr).toMatch(
      new RegExp(
        `instance ${id}: loading: (reboot requested; waiting for the host to carry it out|rebooting: [^\\n]+) \\(\\d+s\\)\\n`,
      ),
    );
    expect(r.stderr).toMatch(new RegExp(`instance ${id}: running: .*\\(\\d+s\\)\\n$`));
    expect(r.stderr).not.toMatch(/\r|\u001b/);
    // The disk was kept.
    if (hasSsh) expect((await inInstance('cat kept.txt')).stdout).toBe('kept\n');
    // (Repeats and the other kind meanwhile: cli-restart.test.ts, where the host waits for the test.)
    const w = await run(['wait', String(id), '--timeout', '60']);
    expect(w.code, w.stderr).toBe(0);
    // The events of all this: one row each on a 50-column terminal, whole when piped.
    if (hasScript) {
      const shown = screenLines((await inPty(['show', 'events'], 50)).out).filter((l) => l.trim() !== '');
      expect(shown.length).toBeGreaterThan(3);
      for (const l of shown) expect([...l].length, l).toBeLessThanOrEqual(50);
    }
    const events = (await run(['show', 'events'])).stdout.split('\n');
    expect(events.some((l) => /instance\.loading .*status_msg=reboot requested/.test(l))).toBe(true);
  }, 90_000);

  it.runIf(hasScript)(
    'recycle --wait in a terminal redraws one line that fits, with the step',
    async () => {
      const r = await inPty(['recycle', 'instance', String(id), '--wait', '--timeout', '60'], 60);
      expect(r.code, r.out).toBe(0);
      expect(r.out).toMatch(
        new RegExp(`\\r\\u001b\\[2K[|/\\\\-] instance ${id}: loading: (recycle requested|recycling)`),
      );
      // Every redraw fits in 60 columns, its elapsed time kept.
      const frames = r.out.split('\r\u001b[2K').slice(1, -1);
      expect(frames.length).toBeGreaterThan(0);
      for (const f of frames) {
        expect([...f].length, f).toBeLessThanOrEqual(59);
        expect(f).toMatch(/\(\d+s\)$/);
      }
      expect(r.out).toMatch(/is recycled and running again \(after \d+s\)/);
      // The disk starts afresh.
      if (hasSsh) expect((await inInstance('ls')).stdout).not.toContain('kept.txt');
    },
    60_000,
  );

  it('Ctrl-C leaves it and says how to resume; a failed reboot ends the wait with why and exit 1', async () => {
    const child = spawn(process.execPath, [BIN, 'reboot', 'instance', String(id), '--wait'], {
      cwd: ROOT,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: '', OPENRIG_URL: server.url, OPENRIG_API_KEY: key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (err.includes(`instance ${id}: loading`)) {
          clearInterval(t);
          child.kill('SIGINT');
          resolve();
        }
      }, 10);
    });
    expect(await new Promise((resolve) => child.on('exit', (c) => resolve(c)))).toBe(130);
    expect(err).toMatch(
      new RegExp(
        `instance ${id} is still loading and was left as it is \\(resume with: openrig wait ${id}\\)`,
      ),
    );
    const resumed = await run(['wait', String(id), '--timeout', '60']);
    expect(resumed.code, resumed.stderr).toBe(0);

    // The instance's directory made unusable: the reboot stops it and cannot start it again.
    const dir = instanceDir(id);
    renameSync(path.join(dir, 'root'), path.join(dir, 'root.moved'));
    writeFileSync(path.join(dir, 'root'), '');
    const failed = await run(['reboot', 'instance', String(id), '--wait', '--timeout', '60']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      new RegExp(
        `openrig: instance ${id}: the reboot failed: EEXIST[^\\n]*; the instance is exited now\\. Start it again \\(openrig start instance ${id}\\) or destroy it`,
      ),
    );
    expect(hasStack(failed.stderr)).toBe(false);
    rmSync(path.join(dir, 'root'));
    renameSync(path.join(dir, 'root.moved'), path.join(dir, 'root'));
    const back = await run(['start', 'instance', String(id), '--wait', '--timeout', '60']);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toMatch(/is running/);
  }, 90_000);
});

/**
 * Instance IDs come from the server within the completer's 2-second budget; a completion that
 * found none is tried again (up to three times), so that a CI machine too busy to answer in time
 * is not taken for a completer that never asks.
 */
function idsCompleted(complete: () => string[]): string[] {
  let got = complete();
  for (let i = 0; i < 2 && got.length === 0; i++) got = complete();
  return got;
}

describe('shell completion', () => {
  it('bash: commands, subcommands, flags, and instance IDs from the server', async () => {
    const bin = mkdtempSync(path.join(tmpdir(), 'openrig-bin-'));
    writeFileSync(path.join(bin, 'openrig'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, {
      mode: 0o755,
    });
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `eval "$(openrig completion bash)"; COMP_WORDS=(${['openrig', ...words].map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length}; _openrig_complete; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        {
          env: {
            ...process.env,
            PATH: `${bin}:${process.env.PATH}`,
            HOME: home,
            OPENRIG_URL: server.url,
            OPENRIG_API_KEY: key,
          },
        },
      )
        .toString()
        .split('\n')
        .filter(Boolean);
    expect(complete(['sh'])).toEqual(['show']);
    expect(complete(['show', 'in'])).toEqual(['instance', 'instances', 'invoices']);
    expect(complete(['create', 'instance', '3', '--wa'])).toEqual(['--wait']);
    const ids = JSON.parse((await run(['show', 'instances', '--raw'])).stdout).instances.map(
      (i: { id: number }) => String(i.id),
    );
    expect(ids.length).toBeGreaterThan(0);
    expect(idsCompleted(() => complete(['ssh', '']))).toEqual([...ids].sort());
    expect(idsCompleted(() => complete(['stop', 'instance', '']))).toEqual([...ids].sort());
    expect(idsCompleted(() => complete(['update', 'instance', '']))).toEqual([...ids].sort());
    // `--` and `-V` are words to complete, not options of the completer.
    const flags = complete(['show', 'instance', '--']);
    expect(flags).toEqual(expect.arrayContaining(['--raw', '--url', '--wide']));
    expect(flags.every((f) => f.startsWith('--'))).toBe(true);
    expect(complete(['show', 'instances', '-V'])).toEqual([]);
    const direct = await run(['__complete', 'show', 'instances', '-V']);
    expect([direct.code, direct.stdout]).toEqual([0, '']);
  });

  it.runIf(hasFish && hasZsh)(
    'fish and zsh: their scripts complete commands, instance IDs and flags in the shell itself',
    async () => {
      const bin = mkdtempSync(path.join(tmpdir(), 'openrig-bin-'));
      writeFileSync(path.join(bin, 'openrig'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, {
        mode: 0o755,
      });
      const env = {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        HOME: home,
        OPENRIG_URL: server.url,
        OPENRIG_API_KEY: key,
      };
      const lines = (out: string) => out.split('\n').filter(Boolean);
      // fish's own completion engine (complete -C) with the script sourced.
      const fish = (line: string) =>
        lines(
          execFileSync('fish', ['-c', `openrig completion fish | source; complete -C '${line}'`], {
            env,
          }).toString(),
        );
      // zsh: the script's widget with compadd standing in for the completion system.
      const zsh = (words: string[]) =>
        lines(
          execFileSync(
            'zsh',
            [
              '-fc',
              `compdef(){}; compadd(){ shift; print -l -- \${(P)1} }; eval "$(openrig completion zsh)"; words=(openrig ${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length + 1}; _openrig`,
            ],
            { env },
          ).toString(),
        );
      const ids = (
        JSON.parse((await run(['show', 'instances', '--raw'])).stdout) as { instances: { id: number }[] }
      ).instances
        .map((i) => String(i.id))
        .sort();
      expect(ids.length).toBeGreaterThan(0);
      expect(fish('openrig sh')).toEqual(['show']);
      expect(idsCompleted(() => fish('openrig reboot instance '))).toEqual(ids);
      expect(fish('openrig reboot instance 1 --wa')).toEqual(['--wait']);
      expect(zsh(['sh'])).toEqual(['show']);
      expect(idsCompleted(() => zsh(['reboot', 'instance', '']))).toEqual(ids);
      expect(zsh(['create', 'instance', '3', '--wa'])).toEqual(['--wait']);
    },
    30_000,
  );

  it('zsh and fish scripts call the same completer; another shell is a usage error', async () => {
    expect((await run(['completion', 'zsh'])).stdout).toContain('compdef _openrig openrig');
    expect((await run(['completion', 'fish'])).stdout).toContain('complete -c openrig');
    const r = await run(['completion', 'tcsh']);
    expect([r.code, r.stderr]).toEqual([
      2,
      'openrig: completion: shell must be bash, zsh or fish, not "tcsh"\n',
    ]);
  });
});

describe('nothing silent', () => {
  it('the demo banner says where e-mail and SMS go without a provider', () => {
    expect(server.stdout()).toContain(
      `e-mail: no SMTP server configured; every e-mail (2FA codes, maintenance notices) is written to ${path.join(data, 'mail-outbox.jsonl')}`,
    );
    expect(server.stdout()).toContain(
      `SMS: no SMS provider configured; every text message (2FA codes) is written to ${path.join(data, 'sms-outbox.jsonl')}`,
    );
  });

  it("the demo banner's CLI line runs as printed, in the shell that started the server", () => {
    const line = /^CLI: (.+?) {3}\(then: /m.exec(server.stdout())?.[1];
    expect(line).toMatch(/ login --url /);
    const h = mkdtempSync(path.join(tmpdir(), 'openrig-banner-home-'));
    const out = execFileSync('sh', ['-c', line!], {
      cwd: h,
      env: { ...process.env, HOME: h, XDG_CONFIG_HOME: '', OPENRIG_URL: '', OPENRIG_API_KEY: '' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toMatch(/demo@openrig\.local/);
  });

  it('tfa send-email says where the code went', async () => {
    const r = await run(['tfa', 'send-email']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Code e-mailed to d\*\*\*@openrig\.local\n/);
  });

  it('adding a registered SSH key again says so', async () => {
    const r = await run(['ssh-key', 'add', path.join(data, 'demo', 'id_ed25519.pub')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^SSH key already registered as \d+ /);
  });

  it('admin without --data refuses to create a new database at the default path', async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'openrig-admin-cwd-'));
    const r = await new Promise<{ code: number | null; err: string }>((resolve) => {
      const c = spawn(process.execPath, [BIN, 'admin', 'create-user', '--email', 'x@example.com'], {
        cwd,
        env: { ...process.env, DATABASE_URL: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      c.stderr.on('data', (d) => (err += d));
      c.on('exit', (code) => resolve({ code, err }));
    });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^openrig: no database at ${path.join(cwd, 'data', 'openrig.db')} `));
    // Nothing at all was made there (not even the data directory and its secret key).
    expect(existsSync(path.join(cwd, 'data'))).toBe(false);
  });

  it('the agent takes --url like every other command (--server stays)', async () => {
    for (const flag of ['--url', '--server']) {
      const r = await run(['agent', flag, 'nope']);
      expect([r.code, r.stderr]).toEqual([
        2,
        'openrig: --url must be the server URL, e.g. http://127.0.0.1:8080\n',
      ]);
    }
  });
});
