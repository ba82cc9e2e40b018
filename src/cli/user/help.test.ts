// Every user command has --help with an example, checked on the real program.
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram } from '../main.js';

function leaves(c: Command, prefix: string[] = []): { path: string; cmd: Command }[] {
  if (c.commands.length === 0) return [{ path: prefix.join(' '), cmd: c }];
  return c.commands.flatMap((s) => leaves(s, [...prefix, s.name()]));
}

const USER_GROUPS = [
  'search',
  'create',
  'show',
  'stop',
  'start',
  'destroy',
  'update',
  'delete',
  'label',
  'list',
  'unlist',
  'schedule',
  'cancel',
  'set',
  'api-key',
  'ssh-key',
  'tfa',
  'webhook',
  'login',
  'logout',
  'ssh-url',
  'ssh',
  'wait',
];

function helpOf(cmd: Command): string {
  let out = '';
  cmd.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (out += s) });
  cmd.outputHelp();
  return out;
}

describe('--help', () => {
  const program = buildProgram();
  const all = program.commands
    .filter((c) => USER_GROUPS.includes(c.name()))
    .flatMap((c) => leaves(c, [c.name()]));

  it('covers every command the issue lists', () => {
    const paths = all.map((l) => l.path);
    for (const p of [
      'search offers',
      'create instance',
      'show instances',
      'show instance',
      'stop instance',
      'start instance',
      'destroy instance',
      'ssh-url',
      'ssh',
      'schedule maint',
      'show maints',
      'cancel maint',
      'show machines',
      'show earnings',
      'show invoices',
      'list machine',
      'api-key create',
      'api-key show',
      'api-key delete',
      'ssh-key add',
      'ssh-key show',
      'ssh-key delete',
      'show user',
      'set account',
      'login',
      'wait',
      'tfa status',
      'tfa totp-setup',
      'tfa auth-new',
      'tfa activate',
      'tfa login',
      'tfa send-sms',
      'tfa send-email',
      'tfa delete',
      'tfa update',
      'tfa regen-codes',
      'webhook create',
      'webhook test',
      'show webhooks',
      'show events',
      'create template',
      'show templates',
      'delete template',
      'update instance',
      'delete machine',
    ]) {
      expect(paths).toContain(p);
    }
  });

  it.each(
    buildProgram()
      .commands.filter((c) => USER_GROUPS.includes(c.name()))
      .flatMap((c) => leaves(c, [c.name()]))
      .map((l) => [l.path, l.cmd] as const),
  )('%s has an example and the common options', (path, cmd) => {
    const h = helpOf(cmd);
    expect(h).toContain('Example:');
    expect(h).toContain(`openrig ${path}`);
    expect(h).toContain('--raw');
    expect(h).toContain('--api-key');
  });
});
