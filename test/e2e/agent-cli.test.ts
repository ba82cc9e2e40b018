// `openrig agent` usage errors (operator contract: exit 2 on a usage error, with a clear message)
// and a refused key (exit 1).
import { describe, expect, it } from 'vitest';
import { runCli, startServe } from '../helpers/process.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ENV = { OPENRIG_URL: '', OPENRIG_API_KEY: '', OPENRIG_LOG_LEVEL: 'warn' };

describe('openrig agent: usage', () => {
  it('needs a server and a key', async () => {
    const r = await runCli(['agent', '--gpus', 'RTX 4090x1'], ENV);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--server/);
    const k = await runCli(['agent', '--server', 'http://127.0.0.1:1', '--gpus', 'RTX 4090x1'], ENV);
    expect(k.code).toBe(2);
    expect(k.stderr).toMatch(/--api-key/);
  });

  it('refuses bad flags clearly', async () => {
    const base = ['agent', '--server', 'http://127.0.0.1:1', '--api-key', 'or_x'];
    const docker = await runCli([...base, '--gpus', 'RTX 4090x1', '--runtime', 'docker'], ENV);
    expect(docker.code).toBe(2);
    expect(docker.stderr).toMatch(/docker runtime is not implemented.*--runtime process/);
    const gpus = await runCli([...base, '--gpus', 'RTX 4090x0'], ENV);
    expect(gpus.code).toBe(2);
    expect(gpus.stderr).toMatch(/count must be 1 to 64/);
    const price = await runCli([...base, '--gpus', 'RTX 4090', '--price-gpu', 'cheap'], ENV);
    expect(price.code).toBe(2);
    expect(price.stderr).toMatch(/--price-gpu/);
    const machines = await runCli([...base, '--gpus', 'RTX 4090', '--machines', '0'], ENV);
    expect(machines.code).toBe(2);
  });

  it('exits 1 when the server refuses its key', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-cli-'));
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
          '--api-key',
          'or_not_a_key',
          '--gpus',
          'RTX 4090',
          '--state-dir',
          path.join(dir, 'st'),
        ],
        ENV,
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/refused.*401/);
    } finally {
      s.child.kill('SIGTERM');
      await s.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
