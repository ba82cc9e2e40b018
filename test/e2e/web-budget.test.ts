// The console's first load as the build measures it (scripts/web-budget.mjs, run by `npm run
// build`): the JavaScript fetched before the first page shows stays within its budget gzipped, and
// the charting library is not part of it (a chunk of its own, fetched when a chart is first shown).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUDGET_KB, measure } from '../../scripts/web-budget.mjs';
import { ROOT } from '../helpers/process.js';

const web = path.join(ROOT, 'dist', 'web');

describe('the console bundle', () => {
  it(`keeps the first load within ${BUDGET_KB} KB of gzipped JavaScript, without the charting library`, () => {
    expect(existsSync(path.join(web, 'index.html')), 'dist/web: run npm run build').toBe(true);
    const r = measure(web);
    expect(r.initial.length).toBeGreaterThan(0);
    expect(r.firstLoadGzip).toBeLessThanOrEqual(BUDGET_KB * 1024);
    // uPlot's code names its legend's class: no first-load script holds it, one lazy chunk does.
    const holdsUplot = (f: { file: string }) =>
      readFileSync(path.join(web, f.file), 'utf8').includes('u-legend');
    expect(r.initial.filter(holdsUplot)).toEqual([]);
    expect(r.lazy.filter(holdsUplot)).toHaveLength(1);
  });
});
