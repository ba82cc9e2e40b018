// The allow-list of `PUT /api/v0/instances/command/{id}/`: ls, du and rm with their usual
// options (every form the official client's help shows) and plain paths; anything with shell
// syntax, other programs, options that read files or follow links, or `rm /` is refused.
import { describe, expect, it } from 'vitest';
import { parseAllowedCommand } from './instances.remote.js';

describe('parseAllowedCommand', () => {
  it('takes ls, du and rm with plain paths', () => {
    expect(parseAllowedCommand('ls -l /root')).toEqual(['ls', '-l', '/root']);
    expect(parseAllowedCommand('du -sh /root/data')).toEqual(['du', '-sh', '/root/data']);
    expect(parseAllowedCommand('rm -rf /root/tmp/old')).toEqual(['rm', '-rf', '/root/tmp/old']);
    expect(parseAllowedCommand('  ls  ')).toEqual(['ls']);
  });
  it("takes the forms the official client's help shows", () => {
    expect(parseAllowedCommand('ls -l -o -r')).toEqual(['ls', '-l', '-o', '-r']);
    expect(parseAllowedCommand('ls -lor /root')).toEqual(['ls', '-lor', '/root']);
    expect(parseAllowedCommand('du -d2 -h')).toEqual(['du', '-d2', '-h']);
    expect(parseAllowedCommand('rm -r home/delete_this.txt')).toEqual(['rm', '-r', 'home/delete_this.txt']);
  });
  it("du's depth: attached, clustered last, or its own word (then attached to its flag)", () => {
    expect(parseAllowedCommand('du -hd2 /root')).toEqual(['du', '-hd2', '/root']);
    expect(parseAllowedCommand('du -d 2 -h /root')).toEqual(['du', '-d2', '-h', '/root']);
    expect(parseAllowedCommand('du -hd 0')).toEqual(['du', '-hd0']);
    expect(parseAllowedCommand('du --max-depth=3 data')).toEqual(['du', '--max-depth=3', 'data']);
  });
  it('refuses a depth that is not a small number, and options that read files or follow links', () => {
    for (const c of [
      'du -d',
      'du -d -h',
      'du -d /root',
      'du -d 100',
      'du -d2h',
      'du -d 2 ../x',
      'du --max-depth',
      'du --files0-from=/etc/passwd',
      'du --exclude-from=/etc/shadow',
      'du -X /etc/shadow',
      'du -L /root',
      'ls -L /root',
      'ls -d2',
      'ls --dired',
      'ls -',
      'rm --no-preserve-root -rf /',
      'rm -r -- /',
      'rm -rfd ./',
      'rm -ri /root/x',
    ])
      expect(parseAllowedCommand(c), c).toBeNull();
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
