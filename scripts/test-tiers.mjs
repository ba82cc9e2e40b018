// Which tier each test file belongs to, decided by what the file needs:
//   unit — a `*.test.ts` beside the code that needs no database, no build and no process: seconds;
//   int  — a `*.int.test.ts` (runs on SQLite, and on PostgreSQL when DATABASE_URL_TEST is set), the
//          in-process compatibility, race and fuzz tests, and any beside-the-code test that opens a
//          test database;
//   e2e  — needs `npm run build` or a real process, engine or browser: `test/e2e`, `test/crash`,
//          the race tests that spawn processes, and the runtimes' tests that start real children
//          (the process runtime runs the bundle in `dist/`) or talk to a Docker engine.
// Every test file falls in exactly one tier, so the tiers together are the whole suite.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TIERS = ['unit', 'int', 'e2e'];

// Beside-the-code tests whose name says unit but which open a test database.
const NEEDS_DB = new Set(['src/server/http/framework-errors.test.ts']);

// Beside-the-code tests that start real processes, need the build or a Docker engine.
const NEEDS_PROCESSES = new Set([
  'src/agent/docker-engine.test.ts',
  'src/agent/runtime-docker.args.test.ts',
  'src/agent/runtime-docker.preempt.test.ts',
  'src/agent/runtime-docker.recreate.test.ts',
  'src/agent/runtime-docker.usage.test.ts',
  'src/agent/runtime-docker.volumes.test.ts',
  'src/agent/runtime-process.args.test.ts',
  'src/agent/runtime-process.recreate.test.ts',
  'src/agent/runtime-process.secrets.test.ts',
  'src/agent/runtime-process.test.ts',
  'src/agent/runtime-process.usage.test.ts',
]);

/** The tier of a test file, by its path relative to the repository root (`/`-separated). */
export function tierOf(file) {
  if (file.startsWith('test/e2e/') || file.startsWith('test/crash/')) return 'e2e';
  if (NEEDS_PROCESSES.has(file)) return 'e2e';
  if (file.startsWith('test/race/')) return file.endsWith('.int.test.ts') ? 'int' : 'e2e';
  if (file.startsWith('test/')) return 'int';
  if (file.endsWith('.int.test.ts') || NEEDS_DB.has(file)) return 'int';
  return 'unit';
}

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

function walk(dir, out) {
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) walk(rel, out);
    else if (entry.name.endsWith('.test.ts')) out.push(rel);
  }
  return out;
}

/** Every test file of a tier, relative to the repository root. */
export function testFiles(tier) {
  return [...walk('src', []), ...walk('test', [])].filter((f) => tierOf(f) === tier).sort();
}
