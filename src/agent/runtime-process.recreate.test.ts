// An update under the process runtime, with real processes: the instance's processes end, its
// working directory (its disk) starts afresh, and the new onstart runs with the new env; the
// generation is recorded, the SSH host key and port stay; a recreate left stopped runs the new
// configuration at its next start; an older instance directory reads as generation 1.
// Uses the built supervisor (dist/agent/supervisor.js; `npm test` builds first).
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isMainProcess } from './runtime-process.js';
import type { InstanceSpec } from './runtime.js';
import { FILES } from './supervisor.js';
import { pollUntil as waitFor } from '../../test/helpers/poll.js';
import { useProcessRuntime } from '../../test/helpers/process-runtime.js';

const { rt } = useProcessRuntime('recreate');

const spec = (id: number, over: Partial<InstanceSpec> = {}): InstanceSpec => ({
  id,
  image: 'ubuntu',
  disk: 1,
  onstart: 'echo "one $FOO" > one.out; sleep 300',
  env: { FOO: 'first' },
  authorizedKeys: [],
  generation: 1,
  ...over,
});

const file = (id: number, name: string) => path.join(rt.dir(id), 'root', name);
const read = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8') : null);

describe('process runtime: recreate (update instance)', () => {
  it('the new onstart runs with the new env in an emptied directory; the old processes are gone; same SSH port', async () => {
    await rt.start(spec(1));
    expect(
      await waitFor(
        () => read(file(1, 'one.out')),
        (s) => s !== null,
      ),
    ).toBe('one first\n');
    const before = await rt.inspect(1);
    expect(before).toMatchObject({ state: 'running', generation: 1 });
    const oldPid = Number(readFileSync(path.join(rt.dir(1), FILES.pid), 'utf8'));
    const hostKey = readFileSync(path.join(rt.dir(1), FILES.hostKey), 'utf8');

    await rt.recreate(
      spec(1, { onstart: 'echo "two $FOO" > two.out; sleep 300', env: { FOO: 'second' }, generation: 2 }),
      { start: true },
    );
    const after = await rt.inspect(1);
    expect(after).toMatchObject({ state: 'running', generation: 2 });
    if (before.state === 'running' && after.state === 'running') expect(after.sshPort).toBe(before.sshPort);
    expect(isMainProcess(oldPid, rt.dir(1))).toBe(false);
    expect(
      await waitFor(
        () => read(file(1, 'two.out')),
        (s) => s !== null,
      ),
    ).toBe('two second\n');
    // The disk started afresh: what the old configuration wrote is gone.
    expect(existsSync(file(1, 'one.out'))).toBe(false);
    expect(readFileSync(path.join(rt.dir(1), FILES.hostKey), 'utf8')).toBe(hostKey);
    expect(readFileSync(path.join(rt.dir(1), FILES.onstart), 'utf8')).toContain('two $FOO');
  });

  it('left stopped: nothing runs, the generation is the new one, and the next start runs the new configuration', async () => {
    await rt.start(spec(2));
    await waitFor(
      () => read(file(2, 'one.out')),
      (s) => s !== null,
    );
    await rt.stop(2);
    await rt.recreate(spec(2, { onstart: 'echo "three $FOO" > three.out; sleep 300', generation: 3 }), {
      start: false,
    });
    expect(await rt.inspect(2)).toEqual({ state: 'stopped', generation: 3 });
    expect(existsSync(file(2, 'one.out'))).toBe(false);
    await rt.start(spec(2, { onstart: 'echo "three $FOO" > three.out; sleep 300', generation: 3 }));
    expect(
      await waitFor(
        () => read(file(2, 'three.out')),
        (s) => s !== null,
      ),
    ).toBe('three first\n');
    expect(await rt.inspect(2)).toMatchObject({ state: 'running', generation: 3 });
  });

  it('a start or reboot does not change the generation; a directory from before generations reads 1', async () => {
    await rt.start(spec(3, { generation: 4 }));
    expect(await rt.inspect(3)).toMatchObject({ generation: 4 });
    // A reboot with a newer spec is not the update: the generation stays, so the agent recreates.
    await rt.reboot(spec(3, { generation: 5 }));
    expect(await rt.inspect(3)).toMatchObject({ state: 'running', generation: 4 });
    rmSync(path.join(rt.dir(3), FILES.generation));
    expect(await rt.inspect(3)).toMatchObject({ state: 'running', generation: 1 });
    writeFileSync(path.join(rt.dir(3), FILES.generation), 'garbage');
    expect(await rt.inspect(3)).toMatchObject({ generation: 1 });
  });
});
