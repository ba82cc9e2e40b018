// OpenSSH public keys: ed25519, ecdsa (nistp256/384/521) and rsa >= 2048 bits.
// Anything that contains a private key is refused and never stored. Pure; tested beside it.
import { createHash } from 'node:crypto';
import type Ssh2 from 'ssh2';
import { lazyRequire } from '../../../contract/lazy-require.js';

const ssh2 = lazyRequire<typeof Ssh2>('ssh2');

export interface ParsedSshKey {
  type: string;
  /** `type base64` normalised, plus the comment when there was one. */
  publicKey: string;
  /** OpenSSH's `SHA256:` fingerprint of the key blob. */
  fingerprint: string;
  comment: string;
  bits: number | null;
}

export type ParseResult = { ok: true; key: ParsedSshKey } | { ok: false; msg: string };

const ALLOWED = new Set([
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'ssh-rsa',
]);

function rsaBits(blob: Buffer): number | null {
  // string "ssh-rsa", mpint e, mpint n (RFC 4253 §6.6)
  let off = 0;
  const read = (): Buffer | null => {
    if (off + 4 > blob.length) return null;
    const len = blob.readUInt32BE(off);
    off += 4;
    if (off + len > blob.length) return null;
    const b = blob.subarray(off, off + len);
    off += len;
    return b;
  };
  read();
  read();
  let n = read();
  if (!n) return null;
  while (n.length > 0 && n[0] === 0) n = n.subarray(1);
  if (n.length === 0) return 0;
  return (n.length - 1) * 8 + (32 - Math.clz32(n[0]!));
}

export function parseSshPublicKey(input: unknown): ParseResult {
  if (typeof input !== 'string' || input.trim() === '')
    return { ok: false, msg: 'ssh_key must be an OpenSSH public key line' };
  const text = input.trim();
  if (/PRIVATE KEY/i.test(text) || /^-----BEGIN/m.test(text)) {
    return {
      ok: false,
      msg: 'ssh_key looks like a private key; send the public key (the .pub file) and keep the private key secret',
    };
  }
  if (text.includes('\n')) return { ok: false, msg: 'ssh_key must be a single public key line' };
  const parsed = ssh2().utils.parseKey(text);
  if (parsed instanceof Error || Array.isArray(parsed))
    return { ok: false, msg: 'ssh_key is not a valid OpenSSH public key' };
  if (parsed.isPrivateKey())
    return { ok: false, msg: 'ssh_key is a private key; send the public key instead' };
  if (!ALLOWED.has(parsed.type)) {
    return {
      ok: false,
      msg: `ssh_key type ${parsed.type} is not accepted (ed25519, ecdsa or rsa of at least 2048 bits)`,
    };
  }
  const blob = parsed.getPublicSSH();
  let bits: number | null = null;
  if (parsed.type === 'ssh-rsa') {
    bits = rsaBits(blob);
    if (bits === null || bits < 2048)
      return {
        ok: false,
        msg: `ssh_key: RSA keys must have at least 2048 bits (this one has ${bits ?? 'unknown'})`,
      };
  }
  const comment = (parsed.comment ?? '').trim();
  const fingerprint = 'SHA256:' + createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
  const base = `${parsed.type} ${blob.toString('base64')}`;
  return {
    ok: true,
    key: { type: parsed.type, publicKey: comment ? `${base} ${comment}` : base, fingerprint, comment, bits },
  };
}
