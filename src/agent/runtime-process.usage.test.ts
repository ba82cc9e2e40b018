// The process runtime's disk usage on a real instance: its directory, walked, counts what the
// instance wrote (onstart's file) and exactly the bytes of files put there afterwards.
// Uses the built supervisor (dist/agent/supervisor.js; `npm test` builds first).
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ProcessRuntime } from './runtime-process.js';
import { pollUntil } from '../../test/helpers/poll.js';

const dir = mkdtempSync(path.join(tmpdir(), 'openrig-rt-usage-'));
const rt = new ProcessRuntime({ stateDir: dir, sshBind: '127.0.0.1', stopGraceMs: 2000 });

afterAll(async () => {
  for (const id of await rt.list()) await rt.destroy(id);
  rmSync(dir, { recursive: true, force: true });
});

describe('process runtime: disk usage', () => {
  it('counts what the instance wrote, and exactly the bytes of files added to its directory', async () => {
    const id = 41;
    expect(await rt.diskUsage(id)).toBeNull();
    await rt.start({
      id,
      image: 'ubuntu',
      disk: 1,
      onstart: 'head -c 3000000 /dev/zero > big.bin && echo done > done.txt; sleep 300',
      env: {},
      authorizedKeys: [],
    });
    const root = path.join(rt.dir(id), 'root');
    const done = await pollUntil(() => existsSync(path.join(root, 'done.txt')), Boolean, 15_000, 50);
    expect(done).toBe(true);
    const running = await rt.diskUsage(id);
    expect(running!.bytes).toBeGreaterThanOrEqual(3_000_000);
    // The rest is the agent's files of it (keys, spec, logs): a few kB.
    expect(running!.bytes).toBeLessThan(3_000_000 + 100_000);
    expect(running!.partial).toBeUndefined();

    // Stopped, nothing writes there any more: the difference is exactly what is added.
    await rt.stop(id);
    const before = (await rt.diskUsage(id))!.bytes;
    mkdirSync(path.join(root, 'data/deeper'), { recursive: true });
    writeFileSync(path.join(root, 'data/a.bin'), Buffer.alloc(1_234_567, 1));
    writeFileSync(path.join(root, 'data/deeper/b.txt'), 'x'.repeat(89));
    expect(await rt.diskUsage(id)).toEqual({ bytes: before + 1_234_567 + 89 });

    await rt.destroy(id);
    expect(await rt.diskUsage(id)).toBeNull();
  });
});
