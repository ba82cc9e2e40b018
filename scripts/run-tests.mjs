#!/usr/bin/env node
// Runs vitest and ends with the plain closing line CI reads: `N passed, N failed[, N skipped]`.
// vitest's own summary is not a line CI reads, so it is computed from its JSON report.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';

const report = 'test-report.json';
rmSync(report, { force: true });
const args = [
  'vitest',
  'run',
  '--reporter=default',
  `--reporter=json`,
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
];
const child = spawn('npx', args, { stdio: 'inherit', env: process.env });
child.on('exit', (code, signal) => {
  let passed = 0,
    failed = 0,
    skipped = 0;
  try {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    for (const file of r.testResults ?? []) {
      for (const t of file.assertionResults ?? []) {
        if (t.status === 'passed') passed++;
        else if (t.status === 'failed') failed++;
        else skipped++;
      }
      // A file that failed to load has no assertions but still failed.
      if ((file.assertionResults ?? []).length === 0 && file.status === 'failed') failed++;
    }
  } catch (err) {
    console.error(`could not read ${report}: ${err.message}`);
    failed = Math.max(failed, 1);
  }
  const exit = code ?? (signal ? 1 : 0);
  if (exit !== 0 && failed === 0) failed = 1;
  console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  process.exit(exit);
});
