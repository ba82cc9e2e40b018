// The process runtime with real processes: an instance of runtype `args` runs its program (the
// entrypoint with the arguments, or the first argument as the program) in place of onstart, and
// ends when it ends; an allow-listed command's output shows paths as the instance sees them.
// Uses the built supervisor (dist/agent/supervisor.js; `npm test` builds first).
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { instancePaths } from './runtime-process.js';
import type { InstanceSpec } from './runtime.js';
import { pollUntil as waitFor } from '../../test/helpers/poll.js';
import { useProcessRuntime } from '../../test/helpers/process-runtime.js';

const { dir, rt } = useProcessRuntime('args');

const spec = (id: number, over: Partial<InstanceSpec> = {}): InstanceSpec => ({
  id,
  image: 'ubuntu:22.04',
  disk: 1,
  onstart: '',
  env: { FOO: 'bar' },
  authorizedKeys: [],
  ...over,
});

const read = (id: number, f: string) => {
  const p = path.join(rt.dir(id), 'root', f);
  return existsSync(p) ? readFileSync(p, 'utf8') : '';
};

describe('process runtime: runtype args', () => {
  it('runs the entrypoint with the arguments in place of onstart; its output is the log', async () => {
    await rt.start(
      spec(1, {
        onstart: '/bin/sh',
        entrypoint: '/bin/sh',
        args: ['-c', 'echo "from-args $FOO" > args.out; echo logged; sleep 300'],
      }),
    );
    expect(
      await waitFor(
        () => read(1, 'args.out'),
        (s) => s !== '',
      ),
    ).toBe('from-args bar\n');
    expect(
      await waitFor(
        () => rt.logs(1, null),
        (s) => s !== '',
      ),
    ).toBe('logged\n');
    expect((await rt.inspect(1)).state).toBe('running');
    await rt.stop(1);
    expect(await rt.inspect(1)).toEqual({ state: 'stopped', generation: 1 });
  });

  it('without an entrypoint the first argument is the program', async () => {
    await rt.start(spec(2, { args: ['/bin/sh', '-c', 'echo no-entrypoint > args.out; sleep 300'] }));
    expect(
      await waitFor(
        () => read(2, 'args.out'),
        (s) => s !== '',
      ),
    ).toBe('no-entrypoint\n');
  });

  it('onstart is not run, and the instance ends with its program (exit code in the message)', async () => {
    await rt.start(
      spec(3, { onstart: 'touch onstart.ran', entrypoint: 'sh', args: ['-c', 'sleep 1; exit 3'] }),
    );
    const st = await waitFor(
      () => rt.inspect(3),
      (s) => s.state === 'exited',
    );
    expect(st).toEqual({ state: 'exited', msg: expect.stringContaining('code 3'), generation: 1 });
    expect(existsSync(path.join(rt.dir(3), 'root/onstart.ran'))).toBe(false);
  });

  it('without args (an older server) onstart runs as before', async () => {
    await rt.start(spec(4, { onstart: 'echo ran > onstart.out; sleep 300', args: null, entrypoint: null }));
    expect(
      await waitFor(
        () => read(4, 'onstart.out'),
        (s) => s !== '',
      ),
    ).toBe('ran\n');
  });
});

describe('process runtime: execute shows paths as the instance sees them', () => {
  it('absolute paths read from the instance root, relative ones as given; the host path never shows', async () => {
    await rt.start(spec(5, { onstart: 'sleep 300' }));
    const root = path.join(rt.dir(5), 'root');
    writeFileSync(path.join(root, 'up.txt'), 'hello\n');
    const abs = await rt.execute(5, ['ls', '-l', '/up.txt']);
    expect(abs).toMatch(/ \/up\.txt\n$/);
    expect(await rt.execute(5, ['ls', '-l', 'up.txt'])).toMatch(/ up\.txt\n$/);
    expect(await rt.execute(5, ['ls', '-d', '/'])).toBe('/\n');
    expect(await rt.execute(5, ['du', '-s', '/'])).toMatch(/^\d+\t\/\n$/);
    const missing = await rt.execute(5, ['ls', '/nope']);
    expect(missing).toContain('/nope');
    expect(missing).toContain('(exit code 2)');
    for (const out of [abs, missing]) expect(out).not.toContain(dir);
    await expect(rt.execute(5, ['ls', '/../..'])).rejects.toThrow(/outside the instance/);
  });

  it('instancePaths replaces the root, and only the root', () => {
    const root = '/var/lib/agent/instances/6/root';
    expect(instancePaths(`${root}/up.txt\n4\t${root}\n${root}/a/b: x\n`, root)).toBe(
      '/up.txt\n4\t/\n/a/b: x\n',
    );
    expect(instancePaths(`${root}less/x\n'${root}'\n`, root)).toBe(`${root}less/x\n'/'\n`);
  });
});
