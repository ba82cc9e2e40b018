// The Docker runtime against the real engine: an instance of runtype `args` runs its image as
// `docker run [--entrypoint E] IMAGE ARGS…` would (the arguments reach the entrypoint; the image's
// Cmd is replaced), its end is the instance's, and a command's output shows the container's paths.
import { describe, expect, it } from 'vitest';
import { dockerUnavailable } from '../../test/helpers/docker.js';
import { useDockerRuntime } from '../../test/helpers/docker-runtime.js';
import { containerName } from './runtime-docker.js';
import { pollUntil } from '../../test/helpers/poll.js';

const why = dockerUnavailable();
if (why) console.log(`docker runtime args tests skipped: ${why}`);

// Ids far above the end-to-end tests' (their servers number instances from 1): the names differ.
const IDS = [987101, 987102, 987103];

const waitFor = <T>(fn: () => T | Promise<T>, ok: (v: T) => boolean) => pollUntil(fn, ok, 15_000, 100);

describe.skipIf(why !== null)('docker runtime: runtype args', () => {
  const { rt, spec } = useDockerRuntime({ name: 'args', ids: IDS, env: { FOO: 'bar' } });

  it('the given entrypoint gets the arguments; onstart (the entrypoint as the client sent it) is not run again', async () => {
    const id = IDS[0]!;
    await rt.start(
      spec(id, {
        onstart: '/bin/sh',
        entrypoint: '/bin/sh',
        args: ['-c', 'echo "from-args $FOO" > /root/args.out; echo logged; sleep 1000'],
      }),
    );
    const c = (await rt.engine.inspect(containerName(id))) as unknown as {
      Config: { Entrypoint: string[]; Cmd: string[] };
    };
    expect(c.Config.Entrypoint).toEqual(['/bin/sh']);
    expect(c.Config.Cmd).toEqual(['-c', 'echo "from-args $FOO" > /root/args.out; echo logged; sleep 1000']);
    expect(
      await waitFor(
        () => rt.execute(id, ['cat', '/root/args.out']),
        (s) => s.startsWith('from'),
      ),
    ).toBe('from-args bar\n');
    expect(await rt.logs(id, null)).toContain('logged');
    expect((await rt.inspect(id)).state).toBe('running');
    // A command's output names paths as the container sees them.
    expect(await rt.execute(id, ['ls', '-l', '/root/args.out'])).toMatch(/ \/root\/args\.out\n$/);
    expect(await rt.execute(id, ['du', '-d0', '/root'])).toMatch(/^\d+\t\/root\n$/);
  }, 60_000);

  it("without an entrypoint the arguments replace the image's Cmd", async () => {
    const id = IDS[1]!;
    await rt.start(spec(id, { args: ['/bin/sh', '-c', 'echo image-cmd > /root/args.out; sleep 1000'] }));
    expect(
      await waitFor(
        () => rt.execute(id, ['cat', '/root/args.out']),
        (s) => s.startsWith('image'),
      ),
    ).toBe('image-cmd\n');
  }, 60_000);

  it('the instance ends with its program', async () => {
    const id = IDS[2]!;
    await rt.start(spec(id, { entrypoint: '/bin/sh', args: ['-c', 'sleep 1; exit 3'] }));
    const st = await waitFor(
      () => rt.inspect(id),
      (s) => s.state === 'exited',
    );
    expect(st).toEqual({ state: 'exited', msg: 'container exited (exit code 3)', generation: 1 });
  }, 60_000);
});
