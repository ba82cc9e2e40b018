// The source path of a copy is resolved inside the instance as a chroot would; rsync's progress
// lines are read; a `vastai_kaalia` login may run rsync's daemon and nothing else, with a config
// naming the instance's modules only.
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseProgress, resolveInRoot } from './copy-runner.js';
import { instanceModules, isRsyncDaemonCommand, rsyncConfig } from './rsync-daemon.js';

const dir = mkdtempSync(path.join(tmpdir(), 'openrig-resolve-'));
const root = path.join(dir, 'root');
mkdirSync(path.join(root, 'work/sub'), { recursive: true });
mkdirSync(path.join(dir, 'outside'));
symlinkSync(path.join(dir, 'outside'), path.join(root, 'abs')); // absolute, out of the instance
symlinkSync('../../..', path.join(root, 'work/up')); // relative, climbing above the root
symlinkSync('/work/sub', path.join(root, 'inside')); // absolute, inside the instance
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('resolveInRoot', () => {
  it('keeps a plain path under the root, with its trailing slash', () => {
    expect(resolveInRoot(root, '/work/')).toBe(`${root}/work/`);
    expect(resolveInRoot(root, '/work')).toBe(`${root}/work`);
    expect(resolveInRoot(root, '/')).toBe(`${root}/`);
  });
  it('reads an absolute link against the instance root, never the host', () => {
    expect(resolveInRoot(root, '/abs/x')).toBe(path.join(root, dir, 'outside', 'x'));
    expect(resolveInRoot(root, '/inside/')).toBe(`${root}/work/sub/`);
  });
  it('stops .. and relative links at the root', () => {
    expect(resolveInRoot(root, '/work/up/')).toBe(`${root}/`);
    expect(resolveInRoot(root, '/work/up/abs')).toBe(path.join(root, dir, 'outside'));
  });
  it('refuses a loop of links', () => {
    symlinkSync('/loop', path.join(root, 'loop'));
    expect(() => resolveInRoot(root, '/loop/x')).toThrow(/symbolic links/);
  });
});

describe('parseProgress', () => {
  it("reads rsync's --info=progress2 line", () => {
    expect(parseProgress('     12,345,678  45%   12.34MB/s    0:00:03 (xfr#3, to-chk=2/9)')).toEqual({
      bytes: 12345678,
      percent: 45,
      rate: '12.34MB/s',
    });
    expect(parseProgress('sending incremental file list')).toBeNull();
  });
});

describe('the rsync login', () => {
  it('runs only rsync --server --daemon', () => {
    expect(isRsyncDaemonCommand('rsync --server --daemon .')).toBe(true);
    expect(isRsyncDaemonCommand('rsync --server --sender -vlogDtpre.iLsfxCIvu . /etc')).toBe(false);
    expect(isRsyncDaemonCommand('rsync --server --daemon --config=/tmp/evil .')).toBe(false);
    expect(isRsyncDaemonCommand('rsync --server --daemon . ; sh')).toBe(false);
    expect(isRsyncDaemonCommand('sh -c id')).toBe(false);
  });
  it("generates one module per name of the instance, chrooted, write-only for a copy's key", () => {
    const conf = rsyncConfig(instanceModules(12, '/proc/4599/root', 'copy'), { chroot: true });
    expect(conf).toContain('use chroot = yes');
    expect(conf.match(/^\[.*\]$/gm)).toEqual(['[12]', '[C.12]']);
    expect(conf).toContain('path = /proc/4599/root');
    expect(conf).toContain('write only = yes');
    expect(conf).toMatch(/refuse options = .*copy-links/);
    const owner = rsyncConfig(instanceModules(12, '/x', 'owner'), { chroot: false });
    expect(owner).toContain('use chroot = no');
    expect(owner).toContain('write only = no');
    expect(owner).not.toContain('munge symlinks = no');
  });
});
