import { expect, it } from 'vitest';
import ssh2 from 'ssh2';
import { ed25519KeyPair } from './ssh-keygen.js';

it('every generated ed25519 pair parses (ssh2 alone makes a broken one about once in 200)', () => {
  for (let i = 0; i < 1000; i++) {
    const kp = ed25519KeyPair('t@openrig');
    expect(ssh2.utils.parseKey(kp.public)).not.toBeInstanceOf(Error);
    expect(ssh2.utils.parseKey(kp.private)).not.toBeInstanceOf(Error);
  }
});
