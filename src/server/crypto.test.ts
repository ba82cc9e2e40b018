// encryptSecret / decryptSecret: AES-256-GCM boxes that open with their key only, the empty
// string included.
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret } from './crypto.js';

const key = Buffer.alloc(32, 7);

describe('encryptSecret / decryptSecret', () => {
  it.each([[''], ['x'], ['grüß ☃\n'], ['a'.repeat(20000)]])('round-trips plaintext %#', (plain) => {
    const boxed = encryptSecret(key, plain);
    expect(boxed).toMatch(/^v1\.[\w-]+\.[\w-]*\.[\w-]+$/);
    expect(decryptSecret(key, boxed)).toBe(plain);
  });

  it('refuses another key, a changed body or tag, and malformed boxes (the empty string too)', () => {
    for (const plain of ['', 'secret']) {
      const boxed = encryptSecret(key, plain);
      expect(decryptSecret(Buffer.alloc(32, 8), boxed)).toBeNull();
      const [v, iv, body, tag] = boxed.split('.');
      expect(decryptSecret(key, [v, iv, `${body}AAAA`, tag].join('.'))).toBeNull();
      // Another first character (a tag that already starts with A must not stay unchanged).
      const otherTag = `${tag![0] === 'A' ? 'B' : 'A'}${tag!.slice(1)}`;
      expect(decryptSecret(key, [v, iv, body, otherTag].join('.'))).toBeNull();
      expect(decryptSecret(key, [v, iv, body].join('.'))).toBeNull();
      expect(decryptSecret(key, ['v2', iv, body, tag].join('.'))).toBeNull();
    }
    expect(decryptSecret(key, '')).toBeNull();
  });

  it('a fresh IV each time: one plaintext, two different boxes', () => {
    expect(encryptSecret(key, 'same')).not.toBe(encryptSecret(key, 'same'));
  });
});
