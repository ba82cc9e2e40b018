import { describe, expect, it } from 'vitest';
import * as OTPAuth from 'otpauth';
import {
  BACKUP_CODES_PER_SET,
  backupCodeHmac,
  codeHmac,
  codeMatches,
  isCode,
  isTotpSecret,
  matchTotp,
  newBackupCodeSet,
  newCode,
  newTotpSecret,
  normalizeBackupCode,
  provisioningUri,
  totpAt,
} from './two-factor.codes.js';

const KEY = Buffer.alloc(32, 7);
// RFC 6238 Appendix B: the SHA-1 seed "12345678901234567890".
const RFC_SECRET = OTPAuth.Secret.fromLatin1('12345678901234567890').base32;

describe('one-time codes', () => {
  it('are 6 decimal digits', () => {
    for (let i = 0; i < 200; i++) expect(newCode()).toMatch(/^\d{6}$/);
    expect(isCode('012345')).toBe(true);
    expect(isCode('12345')).toBe(false);
    expect(isCode('12345a')).toBe(false);
    expect(isCode(123456)).toBe(false);
  });

  it('are stored as a keyed hash bound to their challenge', () => {
    const h = codeHmac(KEY, 'challenge-a', '123456');
    expect(h).not.toContain('123456');
    expect(codeMatches(KEY, 'challenge-a', '123456', h)).toBe(true);
    expect(codeMatches(KEY, 'challenge-b', '123456', h)).toBe(false);
    expect(codeMatches(KEY, 'challenge-a', '123457', h)).toBe(false);
    expect(codeMatches(Buffer.alloc(32, 8), 'challenge-a', '123456', h)).toBe(false);
    expect(codeMatches(KEY, 'challenge-a', '123456', null)).toBe(false);
  });
});

describe('TOTP (RFC 6238: SHA-1, 30 s, 6 digits, ±1 step)', () => {
  it('matches the RFC 6238 test vectors (last 6 digits of the 8-digit values)', () => {
    const vectors: [number, string][] = [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
      [20000000000, '65353130'],
    ];
    for (const [t, code8] of vectors) expect(totpAt(RFC_SECRET, t * 1000)).toBe(code8.slice(2));
  });

  it('accepts one step either side and reports the step that matched', () => {
    const t = 1_800_000_000_000;
    const step = Math.floor(t / 30_000);
    expect(matchTotp(RFC_SECRET, totpAt(RFC_SECRET, t), t)).toBe(step);
    expect(matchTotp(RFC_SECRET, totpAt(RFC_SECRET, t - 30_000), t)).toBe(step - 1);
    expect(matchTotp(RFC_SECRET, totpAt(RFC_SECRET, t + 30_000), t)).toBe(step + 1);
    expect(matchTotp(RFC_SECRET, totpAt(RFC_SECRET, t - 60_000), t)).toBeNull();
    expect(matchTotp(RFC_SECRET, totpAt(RFC_SECRET, t + 60_000), t)).toBeNull();
    expect(matchTotp(RFC_SECRET, 'abcdef', t)).toBeNull();
  });

  it('makes 160-bit base32 secrets and an otpauth:// URI for them', () => {
    const s = newTotpSecret();
    expect(s).toMatch(/^[A-Z2-7]{32}$/);
    expect(isTotpSecret(s)).toBe(true);
    expect(isTotpSecret('not base32!')).toBe(false);
    expect(isTotpSecret('ABCD')).toBe(false);
    const uri = provisioningUri(s, 'a@example.com');
    expect(uri).toMatch(/^otpauth:\/\/totp\/openrig:a%40example\.com\?/);
    expect(uri).toContain(`secret=${s}`);
    expect(uri).toContain('algorithm=SHA1');
    expect(uri).toContain('digits=6');
    expect(uri).toContain('period=30');
  });
});

describe('backup codes', () => {
  it('come 10 to a set, unique, shaped XXXX-XXXX-XXXX', () => {
    const set = newBackupCodeSet();
    expect(set).toHaveLength(BACKUP_CODES_PER_SET);
    expect(new Set(set).size).toBe(10);
    for (const c of set) expect(c).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/);
  });

  it('are accepted as typed (case, dashes, spaces) and refused when malformed', () => {
    const [c] = newBackupCodeSet();
    expect(normalizeBackupCode(c!.toLowerCase())).toBe(c);
    expect(normalizeBackupCode(c!.replace(/-/g, ' '))).toBe(c);
    expect(normalizeBackupCode(c!.replace(/-/g, ''))).toBe(c);
    expect(normalizeBackupCode('ABCD-EFGH')).toBeNull();
    expect(normalizeBackupCode('ABCD-EFGH-IJK0')).toBeNull(); // I and 0 are not in the alphabet
  });

  it('are stored as an HMAC with the server key, not in plaintext', () => {
    const [c] = newBackupCodeSet();
    const h = backupCodeHmac(KEY, c!);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(h).not.toContain(c!);
    expect(backupCodeHmac(Buffer.alloc(32, 1), c!)).not.toBe(h);
  });
});
