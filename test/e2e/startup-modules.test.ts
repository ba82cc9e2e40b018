// What every process of the command loads before it does anything: `serve` starts one process
// per core, and each package loaded at start-up is parsed by each of them. Packages that only
// some code paths use (the SSH servers of the agent, its Docker engine client, the QR code of
// `tfa totp-setup`) load on their first use.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The packages under node_modules that loading the command and printing its version required. */
function packagesLoadedAtStart(): string[] {
  const bundle = path.join(ROOT, 'dist/cli/main.bundle.js');
  const entry = existsSync(bundle) ? bundle : path.join(ROOT, 'dist/cli/main.js');
  const script = `
    import { createRequire } from 'node:module';
    const { main } = await import(${JSON.stringify(pathToFileURL(entry).href)});
    const code = await main(['node', 'openrig', '--version']);
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    process.stderr.write('LOADED ' + JSON.stringify(loaded) + ' CODE ' + code + '\\n');
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const m = /LOADED (\[.*\]) CODE (\S+)/.exec(r.stderr);
  if (!m) throw new Error(`no report: ${r.stderr.slice(-2000)}`);
  expect(m[2]).toBe('0');
  expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  const names = new Set<string>();
  for (const file of JSON.parse(m[1]!) as string[]) {
    const p = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (p) names.add(p[1]!);
  }
  return [...names].sort();
}

describe('start-up of the command', () => {
  it('loads neither ssh2, undici nor qrcode-terminal until a command uses them', () => {
    const loaded = packagesLoadedAtStart();
    // pino (the log) is loaded at start: the list is read, not empty by mistake.
    expect(loaded).toContain('pino');
    for (const lazy of [
      'ssh2',
      'undici',
      'qrcode-terminal',
      'better-sqlite3',
      'pg',
      'nodemailer',
      '@node-rs/argon2',
    ])
      expect(loaded).not.toContain(lazy);
  });

  it('leaves undici out of the one-file bundle every process parses', () => {
    const bundle = path.join(ROOT, 'dist/cli/main.bundle.js');
    // `npm ci` builds it (prepare), like the rest of dist/ that these tests run.
    expect(existsSync(bundle)).toBe(true);
    // esbuild names each bundled CommonJS module by its path; fastify is in it, undici is not.
    const text = readFileSync(bundle, 'utf8');
    expect(text).toContain('node_modules/fastify/');
    expect(text).not.toContain('node_modules/undici/');
  });
});
