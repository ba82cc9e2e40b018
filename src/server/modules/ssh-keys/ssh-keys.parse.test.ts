import { describe, expect, it } from 'vitest';
import { generateKeyPairSync, createHash } from 'node:crypto';
import ssh2 from 'ssh2';
import { ed25519KeyPair } from '../../../contract/ssh-keygen.js';
import { parseSshPublicKey } from './ssh-keys.parse.js';

function rsaPublicLine(bits: number): string {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const jwk = publicKey.export({ format: 'jwk' }) as { n: string; e: string };
  const mp = (b64: string) => {
    let b = Buffer.from(b64, 'base64url');
    if (b[0]! & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
    return b;
  };
  const str = (b: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  const blob = Buffer.concat([str(Buffer.from('ssh-rsa')), str(mp(jwk.e)), str(mp(jwk.n))]);
  return `ssh-rsa ${blob.toString('base64')} rsa@test`;
}

describe('ssh public key parsing', () => {
  it('accepts ed25519 with its OpenSSH SHA256 fingerprint and comment', () => {
    const k = ed25519KeyPair('alice@laptop');
    const r = parseSshPublicKey(k.public);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const blob = Buffer.from(k.public.split(' ')[1]!, 'base64');
    expect(r.key.fingerprint).toBe(
      'SHA256:' + createHash('sha256').update(blob).digest('base64').replace(/=+$/, ''),
    );
    expect(r.key.type).toBe('ssh-ed25519');
    expect(r.key.comment).toBe('alice@laptop');
  });

  it('accepts ecdsa', () => {
    const k = ssh2.utils.generateKeyPairSync('ecdsa', { bits: 256 });
    const r = parseSshPublicKey(k.public);
    expect(r.ok && r.key.type).toBe('ecdsa-sha2-nistp256');
  });

  it('accepts rsa of 2048 bits and refuses 1024', () => {
    const ok = parseSshPublicKey(rsaPublicLine(2048));
    expect(ok.ok && ok.key.bits).toBe(2048);
    const weak = parseSshPublicKey(rsaPublicLine(1024));
    expect(weak.ok).toBe(false);
    if (!weak.ok) expect(weak.msg).toContain('2048');
  });

  it('refuses private keys in any form', () => {
    const k = ed25519KeyPair();
    const r = parseSshPublicKey(k.private);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.msg).toMatch(/private/);
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs1', format: 'pem' })
      .toString();
    expect(parseSshPublicKey(pem).ok).toBe(false);
    expect(parseSshPublicKey(`ssh-ed25519 AAAA x\n${k.private}`).ok).toBe(false);
  });

  it('refuses garbage, empty input, non-strings and other key types', () => {
    for (const bad of ['', 'hello', 'ssh-ed25519 !!!', 42, null, 'ssh-dss AAAAB3NzaC1kc3MAAACBAP']) {
      expect(parseSshPublicKey(bad).ok).toBe(false);
    }
  });
});
