// The Docker runtime against the real engine: a preempted instance's stop gives its program the
// grace the server sent (stop_grace_s) between SIGTERM and the kill, not the runtime's own, and
// keeps its files; a start brings it back with them.
import { describe, expect, it } from 'vitest';
import { performance } from 'node:perf_hooks';
import { dockerUnavailable } from '../../test/helpers/docker.js';
import { useDockerRuntime } from '../../test/helpers/docker-runtime.js';
import { pollUntil } from '../../test/helpers/poll.js';

const why = dockerUnavailable();
if (why) console.log(`docker runtime preemption tests skipped: ${why}`);

// Ids far above the end-to-end tests' (their servers number instances from 1): the names differ.
const IDS = [987301];
const PROGRAM = [
  '-c',
  'trap "echo term >> /root/events.txt" TERM; echo start >> /root/events.txt; while true; do sleep 0.2; done',
];

describe.skipIf(why !== null)('docker runtime: preemption', () => {
  // The runtime's own stop grace is 1 s; the preemption's is 4 s.
  const { rt, spec } = useDockerRuntime({ name: 'preempt', ids: IDS, stopGraceS: 1 });

  it('SIGTERM reaches the program, which runs on until the grace ends; its files are kept for the resume', async () => {
    const id = IDS[0]!;
    const s = spec(id, { entrypoint: '/bin/sh', args: PROGRAM });
    await rt.start(s);
    await pollUntil(
      () => rt.execute(id, ['cat', '/root/events.txt']).catch(() => ''),
      (x) => x.includes('start'),
      15_000,
      100,
    );
    const t0 = performance.now();
    await rt.stop(id, 4);
    const took = (performance.now() - t0) / 1000;
    // The program ignored SIGTERM: the engine killed it when the 4 s grace ran out, not after 1 s.
    expect(took).toBeGreaterThanOrEqual(3.5);
    expect((await rt.inspect(id)).state).toBe('stopped');
    await rt.start(s);
    const events = await pollUntil(
      () => rt.execute(id, ['cat', '/root/events.txt']).catch(() => ''),
      (x) => x.split('start').length === 3,
      15_000,
      100,
    );
    expect(events).toBe('start\nterm\nstart\n');
  }, 60_000);
});
