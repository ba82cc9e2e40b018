// Logs of the process runtime: only the end of the output file is read, so a huge log answers
// the last LOGS_MAX_LINES lines (at most LOGS_MAX_BYTES) as fast as a small one.
import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LOGS_MAX_BYTES, LOGS_MAX_LINES } from './runtime.js';
import { tailFile } from './runtime-process.js';
import { useProcessRuntime } from '../../test/helpers/process-runtime.js';

const { dir, rt } = useProcessRuntime('logs');

describe('process runtime logs', () => {
  it('without a tail: the last LOGS_MAX_LINES lines of a huge log; with one, the engine-like tail', async () => {
    mkdirSync(rt.dir(1), { recursive: true });
    const lines = Array.from({ length: 120_000 }, (_, i) => `${i + 1} some output of the instance`);
    writeFileSync(path.join(rt.dir(1), 'onstart.log'), lines.join('\n') + '\n');
    const t0 = performance.now();
    const all = await rt.logs(1, null);
    expect(performance.now() - t0).toBeLessThan(500);
    expect(all.split('\n').filter(Boolean)).toEqual(lines.slice(-LOGS_MAX_LINES));
    expect(await rt.logs(1, 2)).toBe(
      '119999 some output of the instance\n120000 some output of the instance\n',
    );
    expect(await rt.logs(2, null)).toBe('');
  });

  it('never more than the byte cap, cut at a line start; short files and no final newline as they are', async () => {
    const f = path.join(dir, 'long.log');
    writeFileSync(f, 'x'.repeat(LOGS_MAX_BYTES) + '\nlast line\n');
    expect(await tailFile(f, 10, LOGS_MAX_BYTES)).toBe('last line\n');
    writeFileSync(f, 'a\nb\nc');
    expect(await tailFile(f, 2, 1000)).toBe('b\nc');
    expect(await tailFile(f, 5, 1000)).toBe('a\nb\nc');
    expect(await tailFile(f, 0, 1000)).toBe('');
  });
});
