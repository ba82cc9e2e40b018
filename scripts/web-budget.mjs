// The console's first-load budget, checked after `vite build` (npm run build): the JavaScript a
// browser fetches before the first page shows (the entry script of dist/web/index.html and the
// chunks it preloads), gzip-compressed, must stay within BUDGET_KB. Chunks loaded later with
// import() (the charting library) are listed but not counted. Prints one line per file and the
// total; exits 1 when over. `--json` prints the figures as JSON instead (for tests).
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

export const BUDGET_KB = 250;

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** The first load's scripts and the others, each with its gzipped size in bytes. */
export function measure(webDir = path.join(root, 'dist', 'web')) {
  const html = readFileSync(path.join(webDir, 'index.html'), 'utf8');
  const first = new Set();
  for (const m of html.matchAll(/<script[^>]*\bsrc="\/?([^"]+\.js)"/g)) first.add(m[1]);
  for (const m of html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="\/?([^"]+\.js)"/g)) first.add(m[1]);
  const gz = (rel) => gzipSync(readFileSync(path.join(webDir, rel))).length;
  const all = readdirSync(path.join(webDir, 'assets'))
    .filter((f) => f.endsWith('.js'))
    .map((f) => `assets/${f}`);
  const initial = [...first].map((file) => ({ file, gzip: gz(file) }));
  const lazy = all.filter((f) => !first.has(f)).map((file) => ({ file, gzip: gz(file) }));
  const total = initial.reduce((s, f) => s + f.gzip, 0);
  return { budgetKb: BUDGET_KB, firstLoadGzip: total, initial, lazy };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = measure(process.argv.find((a, i) => i > 1 && !a.startsWith('--')));
  if (process.argv.includes('--json')) console.log(JSON.stringify(r));
  else {
    const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
    for (const f of r.initial) console.log(`console first load: ${f.file} ${kb(f.gzip)} gzip`);
    for (const f of r.lazy) console.log(`console on demand:  ${f.file} ${kb(f.gzip)} gzip`);
    console.log(`console first load: ${kb(r.firstLoadGzip)} of JavaScript gzipped (budget ${BUDGET_KB} KB)`);
  }
  if (r.firstLoadGzip > BUDGET_KB * 1024) {
    console.error(`the console's first load is over its budget of ${BUDGET_KB} KB gzipped`);
    process.exit(1);
  }
}
