import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultPublicKey, parsePermissions, readPublicKey } from './keys.js';
import { UsageError } from './context.js';

describe('ssh-key add', () => {
  it('defaults to ~/.ssh/*.pub, ed25519 before ecdsa before rsa before others', () => {
    const home = mkdtempSync(join(tmpdir(), 'keys-'));
    mkdirSync(join(home, '.ssh'));
    expect(() => defaultPublicKey({ HOME: home })).toThrow('ssh-keygen');
    writeFileSync(join(home, '.ssh', 'aaa.pub'), 'ssh-ed25519 AAAA a');
    writeFileSync(join(home, '.ssh', 'id_rsa.pub'), 'ssh-rsa AAAA b');
    expect(defaultPublicKey({ HOME: home })).toBe(join(home, '.ssh', 'id_rsa.pub'));
    writeFileSync(join(home, '.ssh', 'id_ed25519.pub'), 'ssh-ed25519 AAAA c');
    expect(defaultPublicKey({ HOME: home })).toBe(join(home, '.ssh', 'id_ed25519.pub'));
  });

  it('never sends a private key', () => {
    const f = join(mkdtempSync(join(tmpdir(), 'keys-')), 'id');
    writeFileSync(f, '-----BEGIN OPENSSH PRIVATE KEY-----\nxxx\n-----END OPENSSH PRIVATE KEY-----\n');
    expect(() => readPublicKey(f)).toThrow('is a private key');
    // A bad argument: a usage error (exit 2), like a missing file.
    expect(() => readPublicKey(f)).toThrow(UsageError);
    expect(() => readPublicKey(`${f}.missing`)).toThrow(UsageError);
  });
});

describe('api-key create --permissions', () => {
  it('takes full, read_only or a JSON object', () => {
    expect(parsePermissions(undefined)).toBeUndefined();
    expect(parsePermissions('read_only')).toBe('read_only');
    expect(parsePermissions('{"instances":"write"}')).toEqual({ instances: 'write' });
    expect(() => parsePermissions('[1]')).toThrow(UsageError);
    expect(() => parsePermissions('admin')).toThrow(UsageError);
  });
});
