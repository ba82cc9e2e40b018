// Secrets: high-entropy tokens are stored as SHA-256 and compared in constant time; passwords
// use a slow salted hash (argon2id); TOTP secrets are encrypted with AES-256-GCM.
import * as crypto from 'node:crypto';
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  randomBytes,
  randomInt,
  timingSafeEqual,
} from 'node:crypto';
import type * as Argon2 from '@node-rs/argon2';
import { lazyRequire } from '../contract/lazy-require.js';

const argon2 = lazyRequire<typeof Argon2>('@node-rs/argon2');

/** A new bearer credential: `prefix` + 32 random bytes (256 bits) in base64url. */
export function newToken(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

// One-shot crypto.hash (Node >= 20.12) is about 2.5 times faster than a Hash object: every
// authenticated request hashes its credential.
const oneShot = (crypto as { hash?: (alg: string, data: string, enc: 'hex') => string }).hash;

export function sha256Hex(s: string): string {
  return oneShot ? oneShot('sha256', s, 'hex') : createHash('sha256').update(s).digest('hex');
}

export function hmacHex(key: Buffer, s: string): string {
  return createHmac('sha256', key).update(s).digest('hex');
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab); // keep timing independent of where the mismatch is
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/** A uniformly random string of decimal digits from the CSPRNG. */
export function randomDigits(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String(randomInt(0, 10));
  return s;
}

export async function hashPassword(pw: string): Promise<string> {
  // argon2id with the library's defaults (m=19 MiB, t=2, p=1: OWASP's minimum recommendation).
  return argon2().hash(pw);
}

export async function verifyPassword(hash: string | null, pw: string): Promise<boolean> {
  if (!hash) {
    // Same work as a real check, so a missing account can't be told apart by timing.
    await argon2()
      .verify(await dummyHash(), pw)
      .catch(() => false);
    return false;
  }
  return argon2()
    .verify(hash, pw)
    .catch(() => false);
}

let dummy: Promise<string> | null = null;
function dummyHash(): Promise<string> {
  dummy ??= argon2().hash(randomBytes(16).toString('hex'));
  return dummy;
}

export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
  return [
    'v1',
    iv.toString('base64url'),
    body.toString('base64url'),
    c.getAuthTag().toString('base64url'),
  ].join('.');
}

/** Returns null when the ciphertext is damaged or was made with another key. */
export function decryptSecret(key: Buffer, boxed: string): string | null {
  const [v, iv, body, tag] = boxed.split('.');
  // An empty plaintext has an empty body: the tag still authenticates it.
  if (v !== 'v1' || !iv || body === undefined || !tag) return null;
  try {
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    d.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([d.update(Buffer.from(body, 'base64url')), d.final()]).toString('utf8');
  } catch {
    return null;
  }
}
