// `openrig agent` usage errors (operator contract: exit 2 on a usage error, with a clear message)
// and a refused key (exit 1).
import { describe, expect, it } from 'vitest';
import { runCli, startServe } from '../helpers/process.js';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ENV = { OPENRIG_URL: '', OPENRIG_API_KEY: '', OPENRIG_LOG_LEVEL: 'warn' };

describe('openrig agent: usage', () => {
  it('needs a server and a key', async () => {
    const r = await runCli(['agent', '--gpus', 'RTX 4090x1'], ENV);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--url must be the server URL/);
    const k = await runCli(['agent', '--server', 'http://127.0.0.1:1', '--gpus', 'RTX 4090x1'], ENV);
    expect(k.code).toBe(2);
    expect(k.stderr).toMatch(/OPENRIG_API_KEY or pass --api-key-file/);
  });

  it('takes the key from OPENRIG_API_KEY or a 0600 file, never from the command line', async () => {
    const base = ['agent', '--server', 'http://127.0.0.1:1', '--gpus', 'RTX 4090x1'];
    const argv = await runCli([...base, '--api-key', 'or_secret'], ENV);
    expect(argv.code).toBe(2);
    expect(argv.stderr).toMatch(/--api-key is refused.*\/proc\/PID\/cmdline.*--api-key-file/);
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-key-'));
    try {
      const file = path.join(dir, 'key');
      writeFileSync(file, 'or_secret\n');
      chmodSync(file, 0o644);
      const open = await runCli([...base, '--api-key-file', file], ENV);
      expect(open.code).toBe(2);
      expect(open.stderr).toMatch(/mode 0644: other users can read it; chmod 600/);
      const missing = await runCli([...base, '--api-key-file', path.join(dir, 'nope')], ENV);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad flags clearly', async () => {
    const base = ['agent', '--server', 'http://127.0.0.1:1'];
    const env = { ...ENV, OPENRIG_API_KEY: 'or_x' };
    const runtime = await runCli([...base, '--gpus', 'RTX 4090x1', '--runtime', 'vm'], env);
    expect(runtime.code).toBe(2);
    expect(runtime.stderr).toMatch(/--runtime must be/);
    const docker = await runCli([...base, '--gpus', 'RTX 4090x1', '--runtime', 'docker'], {
      ...env,
      DOCKER_HOST: 'unix:///nonexistent/docker.sock',
    });
    expect(docker.code).toBe(2);
    expect(docker.stderr).toMatch(
      /no Docker engine answers on \/nonexistent\/docker.sock.*--runtime process/,
    );
    const host = await runCli([...base, '--gpus', 'RTX 4090x1', '--public-host', 'a b'], env);
    expect(host.code).toBe(2);
    expect(host.stderr).toMatch(/--public-host/);
    const gpus = await runCli([...base, '--gpus', 'RTX 4090x0'], env);
    expect(gpus.code).toBe(2);
    expect(gpus.stderr).toMatch(/count must be 1 to 64/);
    const price = await runCli([...base, '--gpus', 'RTX 4090', '--price-gpu', 'cheap'], env);
    expect(price.code).toBe(2);
    expect(price.stderr).toMatch(/--price-gpu/);
    const machines = await runCli([...base, '--gpus', 'RTX 4090', '--machines', '0'], env);
    expect(machines.code).toBe(2);
    const usage = await runCli([...base, '--gpus', 'RTX 4090'], { ...env, OPENRIG_USAGE_INTERVAL_S: '0.5' });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/OPENRIG_USAGE_INTERVAL_S must be a number of seconds >= 1/);
    const level = await runCli([...base, '--gpus', 'RTX 4090'], { ...env, OPENRIG_LOG_LEVEL: 'loud' });
    expect(level.code).toBe(2);
    expect(level.stderr).toMatch(/OPENRIG_LOG_LEVEL must be one of fatal, error, warn, info/);
  });

  it('exits 1 when the server refuses its key (read from a 0600 file); the process runtime warns', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-cli-'));
    const keyFile = path.join(dir, 'host.key');
    writeFileSync(keyFile, 'or_not_a_key\n', { mode: 0o600 });
    const s = await startServe(['--data', dir], {
      OPENRIG_SECRET_KEY: 'aa'.repeat(32),
      OPENRIG_LOG_LEVEL: 'warn',
    });
    try {
      const r = await runCli(
        [
          'agent',
          '--server',
          s.url,
          '--api-key-file',
          keyFile,
          '--gpus',
          'RTX 4090',
          '--runtime',
          'process',
          '--state-dir',
          path.join(dir, 'st'),
        ],
        ENV,
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/refused.*401/);
      expect(r.stderr).toMatch(/process runtime gives no isolation.*demos and a single trusted renter/);
    } finally {
      s.child.kill('SIGTERM');
      await s.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
