// The allow-list of `PUT /api/v0/instances/command/{id}/`: ls, du and rm with their usual
// options and plain paths; anything with shell syntax, other programs or `rm /` is refused.
import { describe, expect, it } from 'vitest';
import { parseAllowedCommand } from './instances.remote.js';

describe('parseAllowedCommand', () => {
  it('takes ls, du and rm with plain paths', () => {
    expect(parseAllowedCommand('ls -l /root')).toEqual(['ls', '-l', '/root']);
    expect(parseAllowedCommand('du -sh /root/data')).toEqual(['du', '-sh', '/root/data']);
    expect(parseAllowedCommand('rm -rf /root/tmp/old')).toEqual(['rm', '-rf', '/root/tmp/old']);
    expect(parseAllowedCommand('  ls  ')).toEqual(['ls']);
  });
  it('refuses other programs, shell syntax, unknown options and rm of the root', () => {
    for (const c of [
      'cat /etc/passwd',
      'ls; id',
      'ls && id',
      'ls $(id)',
      'ls `id`',
      'ls > /root/x',
      'ls /root/*',
      'ls --color=always',
      'rm -rf /',
      'rm //',
      'rm -rf /root/../',
      'rm -rf .',
      'ls ../..',
      'du -sh /root | sh',
      "ls '/root'",
      'ls ~',
    ])
      expect(parseAllowedCommand(c), c).toBeNull();
  });
});
