// The pure logic of 2FA codes, kept pure so it can be tested exhaustively: one-time codes, backup codes, TOTP.
// - One-time codes: 6 decimal digits from the CSPRNG.
// - Backup codes: `XXXX-XXXX-XXXX` over a 32-letter alphabet without look-alikes (0/O, 1/I),
//   60 bits each; 10 per set; stored as HMAC-SHA256 with the server key, so a database dump
//   alone does not reveal them (NIST SP 800-63B 5.1.2: look-up secrets of >= 64 bits may be
//   hashed without a slow KDF when keyed; 60 bits plus a secret key is far beyond guessing).
// - TOTP: RFC 6238 with SHA-1, 30-second steps, 6 digits, accepting one step either side.
import { randomInt } from 'node:crypto';
import * as OTPAuth from 'otpauth';
import { hmacHex, randomDigits, safeEqual } from '../../crypto.js';

export const CODE_DIGITS = 6;
export const BACKUP_CODES_PER_SET = 10;
export const TOTP_PERIOD_S = 30;
export const TOTP_WINDOW = 1;
export const LABEL_MAX = 30;

const BACKUP_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

export function newCode(): string {
  return randomDigits(CODE_DIGITS);
}

export function isCode(s: unknown): s is string {
  return typeof s === 'string' && /^\d{6}$/.test(s);
}

/** Keyed hash of a one-time code, bound to its challenge so equal codes hash differently. */
export function codeHmac(key: Buffer, challengeSecretHash: string, code: string): string {
  return hmacHex(key, `code:${challengeSecretHash}:${code}`);
}

export function codeMatches(
  key: Buffer,
  challengeSecretHash: string,
  code: string,
  stored: string | null,
): boolean {
  if (!stored) return false;
  return safeEqual(codeHmac(key, challengeSecretHash, code), stored);
}

export function newBackupCode(): string {
  const groups: string[] = [];
  for (let g = 0; g < 3; g++) {
    let s = '';
    for (let i = 0; i < 4; i++) s += BACKUP_ALPHABET[randomInt(0, BACKUP_ALPHABET.length)];
    groups.push(s);
  }
  return groups.join('-');
}

export function newBackupCodeSet(): string[] {
  const set = new Set<string>();
  while (set.size < BACKUP_CODES_PER_SET) set.add(newBackupCode());
  return [...set];
}

/**
 * Accepts what a person types: any case, with or without dashes or spaces. Null when it cannot
 * be a backup code (wrong length or letters outside the alphabet).
 */
export function normalizeBackupCode(input: string): string | null {
  const s = input.toUpperCase().replace(/[\s-]/g, '');
  if (s.length !== 12) return null;
  for (const ch of s) if (!BACKUP_ALPHABET.includes(ch)) return null;
  return `${s.slice(0, 4)}-${s.slice(4, 8)}-${s.slice(8, 12)}`;
}

export function backupCodeHmac(key: Buffer, normalized: string): string {
  return hmacHex(key, `backup:${normalized}`);
}

/** A new TOTP secret: 20 random bytes (RFC 4226 recommends 160 bits), base32. */
export function newTotpSecret(): string {
  return new OTPAuth.Secret({ size: 20 }).base32;
}

/** True for a base32 string that decodes to at least 80 bits (RFC 4226 minimum 128 recommended). */
export function isTotpSecret(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  const t = s.replace(/\s/g, '').toUpperCase().replace(/=+$/, '');
  if (!/^[A-Z2-7]+$/.test(t) || t.length < 16 || t.length > 128) return false;
  try {
    return OTPAuth.Secret.fromBase32(t).bytes.length >= 10;
  } catch {
    return false;
  }
}

export function canonicalTotpSecret(s: string): string {
  return s.replace(/\s/g, '').toUpperCase().replace(/=+$/, '');
}

function totp(secretBase32: string, label = 'openrig'): OTPAuth.TOTP {
  return new OTPAuth.TOTP({
    issuer: 'openrig',
    label,
    algorithm: 'SHA1',
    digits: CODE_DIGITS,
    period: TOTP_PERIOD_S,
    secret: OTPAuth.Secret.fromBase32(canonicalTotpSecret(secretBase32)),
  });
}

export function provisioningUri(secretBase32: string, account: string): string {
  return totp(secretBase32, account).toString();
}

export function totpAt(secretBase32: string, nowMs: number): string {
  return totp(secretBase32).generate({ timestamp: nowMs });
}

/**
 * The RFC 6238 time step a token matches at `nowMs` (±1 step), or null. The caller must then
 * record the step so it is never accepted twice.
 */
export function matchTotp(secretBase32: string, token: string, nowMs: number): number | null {
  if (!isCode(token)) return null;
  const delta = totp(secretBase32).validate({ token, timestamp: nowMs, window: TOTP_WINDOW });
  if (delta === null) return null;
  return Math.floor(nowMs / 1000 / TOTP_PERIOD_S) + delta;
}
