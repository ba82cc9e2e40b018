// What every process of the command loads before it does anything: `serve` starts one process
// per core, and each package loaded at start-up is parsed by each of them. Packages that only
// some code paths use (the SSH servers of the agent, its Docker engine client, the QR code of
// `tfa totp-setup`) load on their first use.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The packages under node_modules that a process running the command with `args` had required
 * when the command returned (`serve` returns once it listens), and what it wrote to stdout.
 */
function packagesLoaded(
  args: string[],
  env: Record<string, string> = {},
): { loaded: string[]; stdout: string } {
  const bundle = path.join(ROOT, 'dist/cli/main.bundle.js');
  const entry = existsSync(bundle) ? bundle : path.join(ROOT, 'dist/cli/main.js');
  const script = `
    import { createRequire } from 'node:module';
    const { main } = await import(${JSON.stringify(pathToFileURL(entry).href)});
    const code = await main(${JSON.stringify(['node', 'openrig', ...args])});
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    process.stderr.write('LOADED ' + JSON.stringify(loaded) + ' CODE ' + code + '\\n');
    process.exit(0);
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 30_000,
  });
  const m = /LOADED (\[.*\]) CODE (\S+)/.exec(r.stderr);
  if (!m) throw new Error(`no report: ${r.stderr.slice(-2000)}`);
  expect(['0', 'undefined']).toContain(m[2]);
  const names = new Set<string>();
  for (const file of JSON.parse(m[1]!) as string[]) {
    const p = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (p) names.add(p[1]!);
  }
  return { loaded: [...names].sort(), stdout: r.stdout };
}

const ON_FIRST_USE = ['ssh2', 'undici', 'qrcode-terminal', 'pg', 'nodemailer', '@node-rs/argon2'];

describe('start-up of the command', () => {
  it('serve on SQLite loads its driver and its log, and none of the packages it has not used', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-startup-'));
    try {
      const { loaded, stdout } = packagesLoaded(['serve', '--port', '0', '--workers', '1', '--data', dir], {
        OPENRIG_SECRET_KEY: 'ab'.repeat(32),
        OPENRIG_LOG_LEVEL: 'warn',
      });
      expect(stdout).toMatch(/^openrig listening on http:/m);
      expect(loaded).toContain('better-sqlite3');
      expect(loaded).toContain('pino');
      for (const lazy of ON_FIRST_USE) expect(loaded).not.toContain(lazy);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a command that is not serve loads no package of the server', () => {
    const { loaded, stdout } = packagesLoaded(['--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    for (const pkg of [...ON_FIRST_USE, 'pino', 'better-sqlite3']) expect(loaded).not.toContain(pkg);
  });

  it('leaves undici out of the bundle, and the server out of what a user command parses', () => {
    const cli = path.join(ROOT, 'dist/cli');
    // `npm ci` builds it (prepare), like the rest of dist/ that these tests run.
    expect(existsSync(path.join(cli, 'main.bundle.js'))).toBe(true);
    // esbuild names each bundled CommonJS module by its path; fastify is in it, undici is not.
    const files = ['main.bundle.js', ...readdirSync(path.join(cli, 'chunks')).map((f) => `chunks/${f}`)];
    const all = files.map((f) => readFileSync(path.join(cli, f), 'utf8')).join('\n');
    expect(all).toContain('node_modules/fastify/');
    expect(all).not.toContain('node_modules/undici/');
    // The entry file is the command line; the server and its framework are chunks of their own.
    const entry = readFileSync(path.join(cli, 'main.bundle.js'), 'utf8');
    expect(entry).toContain('node_modules/commander/');
    expect(entry).not.toContain('node_modules/fastify/');
    expect(entry).not.toContain('node_modules/kysely/');
  });
});
