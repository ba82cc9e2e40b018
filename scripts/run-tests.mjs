#!/usr/bin/env node
// Runs the test tiers in order — unit, int, e2e — or only those named on the command line
// (`node scripts/run-tests.mjs unit int`), and ends with ONE plain closing line for all of them,
// the line CI reads: `N passed, N failed[, N skipped]`. vitest's own summary is not a line CI
// reads, so the counts come from each tier's JSON report. The build runs only before the e2e
// tier, the one that needs it (`--no-build` skips it when `dist/` is known to be current).
// Any other argument goes to vitest in every tier (a path filter, `-t name`, ...).
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { TIERS } from './test-tiers.mjs';

const argv = process.argv.slice(2);
const named = argv.filter((a) => TIERS.includes(a));
const build = !argv.includes('--no-build');
const passThrough = argv.filter((a) => !TIERS.includes(a) && a !== '--no-build');
const tiers = named.length ? TIERS.filter((t) => named.includes(t)) : TIERS;
const report = 'test-report.json';

/** Counts of one tier's JSON report; a file that failed to load counts as one failure. */
function counts() {
  const c = { passed: 0, failed: 0, skipped: 0 };
  const r = JSON.parse(readFileSync(report, 'utf8'));
  for (const file of r.testResults ?? []) {
    const tests = file.assertionResults ?? [];
    for (const t of tests) {
      if (t.status === 'passed') c.passed++;
      else if (t.status === 'failed') c.failed++;
      else c.skipped++;
    }
    if (tests.length === 0 && file.status === 'failed') c.failed++;
  }
  return c;
}

const total = { passed: 0, failed: 0, skipped: 0 };
let exit = 0;
for (const tier of tiers) {
  if (tier === 'e2e' && build) {
    console.log('\n== build (the e2e tier runs the bundle in dist/) ==');
    const b = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', env: process.env });
    if (b.status !== 0) {
      console.error('the build failed: the e2e tier is not run');
      total.failed++;
      exit = 1;
      continue;
    }
  }
  console.log(`\n== ${tier} tier ==`);
  rmSync(report, { force: true });
  const args = ['vitest', 'run', '-c', `vitest.${tier}.config.ts`, '--reporter=default', '--reporter=json'];
  args.push(`--outputFile.json=${report}`);
  // A filter may leave a tier without files; that tier then simply has nothing to report.
  if (passThrough.length) args.push('--passWithNoTests', ...passThrough);
  const run = spawnSync('npx', args, { stdio: 'inherit', env: process.env });
  const code = run.status ?? 1;
  let c = { passed: 0, failed: 0, skipped: 0 };
  try {
    c = counts();
  } catch (err) {
    console.error(`could not read the ${tier} tier's ${report}: ${err.message}`);
    c.failed = 1;
  }
  if (code !== 0 && c.failed === 0) c.failed = 1;
  if (code !== 0) exit = 1;
  total.passed += c.passed;
  total.failed += c.failed;
  total.skipped += c.skipped;
}
if (total.failed > 0) exit = 1;
console.log(
  `${total.passed} passed, ${total.failed} failed${total.skipped ? `, ${total.skipped} skipped` : ''}`,
);
process.exit(exit);
