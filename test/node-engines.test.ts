// Every package `npm ci` installs supports the oldest Node.js the package names in its engines (and
// the README promises), so `npm ci` there warns of no unsupported engine (EBADENGINE).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from './helpers/process.js';

const require = createRequire(import.meta.url);
// semver is npm's own range logic (Fastify depends on it).
const semver = require('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

const read = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));

it('every locked package supports the oldest Node.js of our engines, which the README names', () => {
  const own = read('package.json').engines.node as string;
  const oldest = semver.minVersion(own)!.version;
  const lock = read('package-lock.json') as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
  };
  const refusing = Object.entries(lock.packages)
    .filter(([where, p]) => {
      const range = !Array.isArray(p.engines) ? p.engines?.node : undefined;
      return where !== '' && range !== undefined && !semver.satisfies(oldest, range);
    })
    .map(
      ([where, p]) => `${where.replace(/^.*node_modules\//, '')}@${p.version} (${JSON.stringify(p.engines)})`,
    );
  expect(refusing, `oldest supported Node.js: ${oldest}`).toEqual([]);
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  expect(readme).toContain(`Node.js ${oldest.replace(/\.0$/, '')}`);
});
