// The Docker runtime's disk usage against the real engine: the container's writable layer (what
// the instance wrote), kept while stopped, plus a volume its image declares.
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { dockerUnavailable } from '../../test/helpers/docker.js';
import { useDockerRuntime } from '../../test/helpers/docker-runtime.js';
import { containerName } from './runtime-docker.js';
import { pollUntil } from '../../test/helpers/poll.js';

const why = dockerUnavailable();
if (why) console.log(`docker runtime disk usage tests skipped: ${why}`);

// Ids far above the end-to-end tests' (their servers number instances from 1): the names differ.
const IDS = [987201, 987202];
const VOLUME_IMAGE = 'openrig-test/busybox-volume:1';

describe.skipIf(why !== null)('docker runtime: disk usage', () => {
  const { rt, spec, image } = useDockerRuntime({ name: 'usage', ids: IDS, stopGraceS: 1 });
  // The engine may not have a size for a moment (diskUsage then throws: no measurement): the
  // poll asks again, as the agent's meter does at its next interval.
  const usage = (id: number, atLeast: number) =>
    pollUntil(
      () => rt.diskUsage(id).catch(() => null),
      (u) => (u?.bytes ?? 0) >= atLeast,
      20_000,
      200,
    );

  beforeAll(() => {
    // The same files, with a volume the image declares (the engine makes an anonymous one).
    if (spawnSync('docker', ['image', 'inspect', VOLUME_IMAGE], { stdio: 'ignore' }).status !== 0) {
      const c = execFileSync('docker', ['create', image()], { encoding: 'utf8' }).trim();
      execFileSync('docker', ['commit', '-c', 'VOLUME ["/data"]', c, VOLUME_IMAGE], { stdio: 'ignore' });
      execFileSync('docker', ['rm', c], { stdio: 'ignore' });
    }
  }, 60_000);

  it("is the container's writable layer: what the instance wrote, still there once stopped", async () => {
    const id = IDS[0]!;
    expect(await rt.diskUsage(id)).toBeNull();
    await rt.start(spec(id, { onstart: 'dd if=/dev/zero of=/root/big.bin bs=1000 count=3000' }));
    const u = await usage(id, 3_000_000);
    expect(u!.bytes).toBeGreaterThanOrEqual(3_000_000);
    expect(u!.bytes).toBeLessThan(3_000_000 + 1_000_000);
    expect(u!.partial).toBeUndefined();
    await rt.stop(id);
    expect((await usage(id, u!.bytes))!.bytes).toBe(u!.bytes);
    await rt.destroy(id);
    expect(await rt.diskUsage(id)).toBeNull();
  });

  it('adds the volumes its image declares', async () => {
    const id = IDS[1]!;
    await rt.start(
      spec(id, {
        image: VOLUME_IMAGE,
        onstart:
          'dd if=/dev/zero of=/data/v.bin bs=1000 count=2000 && dd if=/dev/zero of=/root/r.bin bs=1000 count=1000',
      }),
    );
    const c = await rt.engine.inspect(containerName(id), { size: true });
    expect(c?.Mounts?.map((m) => [m.Type, m.Destination])).toEqual([['volume', '/data']]);
    const u = await usage(id, 3_000_000);
    // The layer alone holds the 1 MB file; the volume adds its 2 MB.
    expect(u!.bytes).toBeGreaterThanOrEqual(3_000_000);
    expect(u!.bytes).toBeLessThan(3_000_000 + 1_000_000);
  });
});
