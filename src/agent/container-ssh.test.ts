import { describe, expect, it } from 'vitest';
import ssh2 from 'ssh2';
import { OPEN_MODE, parseScp, shellWords, STATUS_CODE, unixMode } from './container-ssh.js';

describe('parseScp (the legacy scp protocol OpenSSH runs on the remote side)', () => {
  it('reads the direction, the target and -r', () => {
    expect(parseScp('scp -t /root/x')).toEqual({ mode: 'to', target: '/root/x', recursive: false });
    expect(parseScp('scp -r -t -- /root/tree')).toEqual({
      mode: 'to',
      target: '/root/tree',
      recursive: true,
    });
    expect(parseScp("scp -r -f '/root/a b'")).toEqual({ mode: 'from', target: '/root/a b', recursive: true });
    expect(parseScp('scp -rf data')).toEqual({ mode: 'from', target: 'data', recursive: true });
  });

  it('is not an scp session without a direction or a target, or for another command', () => {
    expect(parseScp('scp /root/x')).toBeNull();
    expect(parseScp('scp -t')).toBeNull();
    expect(parseScp('echo scp -t x')).toBeNull();
  });
});

describe('unixMode (the engine reports Go file modes)', () => {
  it('maps the directory and symlink bits to the Unix type bits', () => {
    expect(unixMode(2 ** 31 + 0o755)).toBe(0o040755);
    expect(unixMode(2 ** 27 + 0o777)).toBe(0o120777);
    expect(unixMode(0o644)).toBe(0o100644);
  });
});

describe('shellWords', () => {
  it('splits as sh does for quotes and backslashes', () => {
    expect(shellWords(`scp -t 'a b' "c \\"d\\"" e\\ f ''`)).toEqual(['scp', '-t', 'a b', 'c "d"', 'e f', '']);
    expect(shellWords("it's")).toBeNull();
    expect(shellWords('"open')).toBeNull();
  });
});

describe('SFTP constants (written out so that loading the module does not load ssh2)', () => {
  it("are ssh2's own values", () => {
    for (const [name, code] of Object.entries(STATUS_CODE))
      expect(code).toBe(ssh2.utils.sftp.STATUS_CODE[name as keyof typeof ssh2.utils.sftp.STATUS_CODE]);
    expect(OPEN_MODE.WRITE).toBe(ssh2.utils.sftp.OPEN_MODE.WRITE);
  });
});
