// Volumes in the Docker runtime against the real engine: a file written in a volume by one
// instance is there for the next instance that mounts it, after the first is destroyed and after
// the runtime is replaced (an agent restart); writing past the volume's size fails inside the
// container ("no space left on device") where the host can make ext4 images; deleting the volume
// (the server's list no longer holds it) deletes its data on the host.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dockerUnavailable } from '../../test/helpers/docker.js';
import { useDockerRuntime } from '../../test/helpers/docker-runtime.js';
import { DockerRuntime } from './runtime-docker.js';
import { loopVolumesAvailable } from './volumes.js';

const why = dockerUnavailable();
if (why) console.log(`docker runtime volume tests skipped: ${why}`);
const noLoop = why ? null : await loopVolumesAvailable();
if (noLoop) console.log(`docker runtime volume size test skipped: ${noLoop}`);

// Ids far above the end-to-end tests' (their servers number instances from 1): the names differ.
const IDS = [987301, 987302, 987303];
const VOL = 424242;
/** 20 MB: small enough to fill in a test. */
const SIZE_GB = 0.02;

describe.skipIf(why !== null)('docker runtime: volumes', () => {
  const { rt, spec } = useDockerRuntime({ name: 'volumes', ids: IDS });
  const mount = { id: VOL, mountPath: '/data', sizeGb: SIZE_GB };
  const keep = 'sleep 100000';

  it('says which method it uses at start', async () => {
    const said = await rt.init();
    expect(said).toContain(rt.volumes.method === 'ext4-loop' ? 'size enforced' : 'size NOT enforced');
    expect(rt.volumes.method).toBe(noLoop === null ? 'ext4-loop' : 'directory');
  }, 30_000);

  it('keeps what one instance wrote for the next, across a destroy and a new runtime', async () => {
    await rt.start(spec(IDS[0]!, { onstart: keep, volumes: [mount] }));
    await rt.execute(IDS[0]!, ['sh', '-c', 'echo checkpoint-1 > /data/ckpt.txt']);
    expect(await rt.execute(IDS[0]!, ['cat', '/data/ckpt.txt'])).toBe('checkpoint-1\n');
    await rt.destroy(IDS[0]!);
    // On the host, in the volume's directory, after the instance is gone.
    expect(readFileSync(`${rt.volumes.dataDir(VOL)}/ckpt.txt`, 'utf8')).toBe('checkpoint-1\n');

    // An agent restart: a new runtime over the same state directory finds the volume as it was.
    const again = new DockerRuntime({
      stateDir: rt.volumes.dir.replace(/\/volumes$/, ''),
      agentUid: 'agent-volumes-test',
      sshBind: '127.0.0.1',
      log: { info: () => {}, warn: () => {} },
    });
    await again.init();
    expect(again.volumes.held()).toEqual([VOL]);
    await again.close();

    await rt.start(spec(IDS[1]!, { onstart: keep, volumes: [mount] }));
    expect(await rt.execute(IDS[1]!, ['cat', '/data/ckpt.txt'])).toBe('checkpoint-1\n');
  }, 120_000);

  it.skipIf(noLoop !== null)(
    'refuses writes past the volume size inside the container',
    async () => {
      const out = await rt.execute(IDS[1]!, [
        'sh',
        '-c',
        'dd if=/dev/zero of=/data/big bs=1M count=40 2>&1; echo "exit=$?"; df -k /data | tail -1',
      ]);
      expect(out).toMatch(/No space left on device/i);
      expect(out).not.toContain('exit=0');
      // The file written before is intact.
      await rt.execute(IDS[1]!, ['rm', '-f', '/data/big']);
      expect(await rt.execute(IDS[1]!, ['cat', '/data/ckpt.txt'])).toBe('checkpoint-1\n');
    },
    60_000,
  );

  it('deletes the data on the host once the volume is no longer listed', async () => {
    await rt.destroy(IDS[1]!);
    const dir = rt.volumes.dataDir(VOL);
    await rt.volumes.reconcile([{ id: VOL }]);
    expect(existsSync(`${dir}/ckpt.txt`)).toBe(true);
    await rt.volumes.reconcile([]);
    expect(existsSync(dir)).toBe(false);
    expect(rt.volumes.held()).toEqual([]);
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(dir);
  }, 60_000);
});
