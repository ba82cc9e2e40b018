// api-key create|show|delete and ssh-key add|show|delete.
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { keyBody } from './ssh-identity.js';
import { act, CliFailure, common, confirm, intArg, UsageError, type OptValue } from './context.js';
import { apiKeysTable, sshKeysTable } from './views.js';
import { keyValues, str } from '../output.js';

export function registerKeyCommands(apiKey: Command, sshKey: Command): void {
  common(
    apiKey
      .command('create')
      .option('--name <name>', 'a name to recognise the key by')
      .option(
        '--permissions <p>',
        'full (default), read_only, or JSON like \'{"instances":"write","offers":"read"}\'',
      )
      .description('create an API key; it is shown once, here'),
    'openrig api-key create --name ci --permissions read_only',
  ).action(
    act(async (ctx, _a, o) => {
      const k = await ctx.client.createApiKey(
        o.name === undefined ? '' : String(o.name),
        parsePermissions(o.permissions),
      );
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        `API key ${k.id}${k.name ? ` (${k.name})` : ''} created. It is shown only this once; store it now:\n${str(k.key)}\n`,
      );
    }),
  );
  common(
    apiKey
      .command('show')
      .argument('[id]', 'one key')
      .description('list your API keys (never the keys themselves)'),
    'openrig api-key show\nopenrig api-key show 3',
  ).action(
    act(async (ctx, [id]) => {
      if (id !== undefined) {
        const k = await ctx.client.getApiKey(intArg(id, 'API key ID'));
        if (ctx.raw) return ctx.printRaw();
        return ctx.out(apiKeysTable([k], ctx.now(), ctx.width));
      }
      const keys = await ctx.client.listApiKeys();
      if (ctx.raw) return ctx.printRaw();
      ctx.out(apiKeysTable(keys, ctx.now(), ctx.width));
    }),
  );
  common(
    apiKey
      .command('delete')
      .argument('<id>', 'API key ID')
      .option('--yes', 'delete it even if it is the key this CLI is using')
      .description('revoke an API key at once'),
    'openrig api-key delete 3',
  ).action(
    act(async (ctx, [id], o) => {
      const n = intArg(id, 'API key ID');
      // Deleting the key in use locks this CLI out (and ends its 2FA sessions): ask first.
      if (!o.yes && ctx.apiKey) {
        const keys = await ctx.client.listApiKeys();
        const inUse = keys.find((k) => k.id === n && !!k.key_prefix && ctx.apiKey!.startsWith(k.key_prefix));
        if (inUse) {
          const answer = await confirm(
            `API key ${n} is the key this CLI is using; after deleting it you need another key (openrig login --email). Delete it? [y/N] `,
          );
          if (answer === null)
            throw new CliFailure(`API key ${n} is the key this CLI is using; pass --yes to delete it anyway`);
          if (!answer) return ctx.out('Nothing deleted.\n');
        }
      }
      await ctx.client.deleteApiKey(n);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`API key ${n} revoked\n`);
    }),
  );

  common(
    sshKey
      .command('add')
      .argument('[file]', 'public key file (default: the first ~/.ssh/*.pub)')
      .description('register an SSH public key for your instances'),
    'openrig ssh-key add\nopenrig ssh-key add ~/.ssh/id_ed25519.pub',
  ).action(
    act(async (ctx, [file]) => {
      const path = file === undefined ? defaultPublicKey(ctx.env) : String(file);
      const text = readPublicKey(path);
      // Adding a key twice is harmless on the server; say so instead of "Added".
      if (!ctx.raw) {
        const same = (await ctx.client.listSshKeys()).find(
          (x) => keyBody(String(x.ssh_key ?? x.public_key ?? '')) === keyBody(text),
        );
        if (same) return ctx.out(`SSH key already registered as ${same.id} (${path})\n`);
      }
      const k = await ctx.client.addSshKey(text);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        keyValues([
          ['Added SSH key', str(k.id)],
          ['From', path],
          ['Fingerprint', str(k.fingerprint)],
          ['Type', str(k.key_type)],
        ]),
      );
    }),
  );
  common(sshKey.command('show').description('list your SSH public keys'), 'openrig ssh-key show').action(
    act(async (ctx) => {
      const keys = await ctx.client.listSshKeys();
      if (ctx.raw) return ctx.printRaw();
      if (keys.length === 0) return ctx.out('No SSH keys. Add one: openrig ssh-key add\n');
      ctx.out(sshKeysTable(keys, ctx.now(), ctx.width));
    }),
  );
  common(
    sshKey.command('delete').argument('<id>', 'SSH key ID').description('remove an SSH public key'),
    'openrig ssh-key delete 5',
  ).action(
    act(async (ctx, [id]) => {
      const n = intArg(id, 'SSH key ID');
      await ctx.client.deleteSshKey(n);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`SSH key ${n} deleted\n`);
    }),
  );
}

export function parsePermissions(v: OptValue): unknown {
  if (v === undefined) return undefined;
  const s = String(v).trim();
  if (s === 'full' || s === 'read_only') return s;
  try {
    const p = JSON.parse(s) as unknown;
    if (typeof p === 'object' && p !== null && !Array.isArray(p)) return p;
  } catch {
    // fall through
  }
  throw new UsageError(
    '--permissions must be full, read_only, or a JSON object like \'{"instances":"write"}\'',
  );
}

/** The first `~/.ssh/*.pub`, preferring ed25519, then ecdsa, then rsa. */
export function defaultPublicKey(env: NodeJS.ProcessEnv): string {
  const dir = join(env.HOME && env.HOME.length > 0 ? env.HOME : homedir(), '.ssh');
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.pub'));
  } catch {
    files = [];
  }
  const rank = (f: string) => ['id_ed25519.pub', 'id_ecdsa.pub', 'id_rsa.pub'].indexOf(f);
  files.sort((a, b) => (rank(a) < 0 ? 99 : rank(a)) - (rank(b) < 0 ? 99 : rank(b)) || a.localeCompare(b));
  if (files.length === 0)
    throw new UsageError(`no public key in ${dir}; create one with ssh-keygen -t ed25519, or name a file`);
  return join(dir, files[0]!);
}

export function readPublicKey(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(
      `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  // Never send a private key anywhere.
  if (/PRIVATE KEY/.test(text)) throw new UsageError(`${path} is a private key; give the .pub file`);
  return text.trim();
}
