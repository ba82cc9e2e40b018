// An update under the Docker runtime, against the real engine: the container is replaced by one
// of the new image and env (a new container: its writable layer starts afresh), labelled with the
// new generation, on the same SSH port and the same host port for a container port it still
// publishes; left stopped when asked; and a new image that cannot be pulled leaves the old
// container as it was.
import { describe, expect, it } from 'vitest';
import { buildTestImage, dockerUnavailable } from '../../test/helpers/docker.js';
import { useDockerRuntime } from '../../test/helpers/docker-runtime.js';
import { containerName, LABEL_GENERATION } from './runtime-docker.js';
import { pollUntil } from '../../test/helpers/poll.js';

const why = dockerUnavailable();
if (why) console.log(`docker runtime recreate tests skipped: ${why}`);

// Ids far above the end-to-end tests' (their servers number instances from 1): the names differ.
const IDS = [987201, 987202, 987203];

interface Inspected {
  Id: string;
  Config: { Image: string; Env: string[]; Labels: Record<string, string> };
  State: { Running: boolean; Status: string };
  HostConfig: { PortBindings: Record<string, { HostPort: string }[]> };
}

describe.skipIf(why !== null)('docker runtime: recreate (update instance)', () => {
  const { rt, spec } = useDockerRuntime({ name: 'recreate', ids: IDS });
  const inspect = async (id: number) => (await rt.engine.inspect(containerName(id))) as unknown as Inspected;

  it('replaces the container by one of the new image and env, on the same ports; the old files are gone', async () => {
    const id = IDS[0]!;
    const first = spec(id, {
      onstart: 'echo "$FOO" > /root/old.txt',
      env: { FOO: 'one' },
      ports: [{ container: 8080, proto: 'tcp' }],
      generation: 1,
    });
    const { sshPort } = await rt.start(first);
    expect(
      await pollUntil(
        () => rt.execute(id, ['cat', '/root/old.txt']),
        (s) => s === 'one\n',
        15_000,
        100,
      ),
    ).toBe('one\n');
    const old = await inspect(id);
    const hostPort = old.HostConfig.PortBindings['8080/tcp']![0]!.HostPort;

    const image = buildTestImage('openrig-test/busybox:update');
    await rt.recreate(
      {
        ...first,
        image,
        env: { FOO: 'two' },
        onstart: 'echo "$FOO" > /root/new.txt',
        ports: [
          { container: 8080, proto: 'tcp' },
          { container: 9090, proto: 'tcp' },
        ],
        generation: 2,
      },
      { start: true },
    );
    const now = await inspect(id);
    expect(now.Id).not.toBe(old.Id);
    expect(now.Config.Image).toBe(image);
    expect(now.Config.Env).toContain('FOO=two');
    expect(now.Config.Env).not.toContain('FOO=one');
    expect(now.Config.Labels[LABEL_GENERATION]).toBe('2');
    expect(now.State.Running).toBe(true);
    expect(now.HostConfig.PortBindings['8080/tcp']![0]!.HostPort).toBe(hostPort);
    expect(Number(now.HostConfig.PortBindings['9090/tcp']![0]!.HostPort)).toBeGreaterThan(0);
    expect(await rt.inspect(id)).toMatchObject({ state: 'running', sshPort, generation: 2 });
    expect(
      await pollUntil(
        () => rt.execute(id, ['cat', '/root/new.txt']),
        (s) => s === 'two\n',
        15_000,
        100,
      ),
    ).toBe('two\n');
    expect(await rt.execute(id, ['ls', '/root'])).not.toContain('old.txt');
  });

  it('left stopped: a created container of the new generation, started by the next start', async () => {
    const id = IDS[1]!;
    await rt.start(spec(id, { generation: 1 }));
    await rt.stop(id);
    await rt.recreate(spec(id, { env: { FOO: 'later' }, generation: 3 }), { start: false });
    const c = await inspect(id);
    expect(c.State.Running).toBe(false);
    expect(c.Config.Labels[LABEL_GENERATION]).toBe('3');
    expect(await rt.inspect(id)).toEqual({ state: 'stopped', generation: 3 });
    await rt.start(spec(id, { env: { FOO: 'later' }, generation: 3 }));
    expect((await inspect(id)).Id).toBe(c.Id);
    expect(await rt.inspect(id)).toMatchObject({ state: 'running', generation: 3 });
  });

  it('a new image that cannot be pulled leaves the old container as it was', async () => {
    const id = IDS[2]!;
    await rt.start(spec(id, { generation: 1 }));
    const old = await inspect(id);
    await expect(
      rt.recreate(spec(id, { image: '127.0.0.1:1/openrig-none:1', generation: 2 }), { start: true }),
    ).rejects.toThrow();
    const still = await inspect(id);
    expect(still.Id).toBe(old.Id);
    expect(await rt.inspect(id)).toMatchObject({ state: 'running', generation: 1 });
  });
});
