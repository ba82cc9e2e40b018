// An OpenSSH ed25519 key pair that is sure to be valid. ssh2's generateKeyPairSync('ed25519')
// drops a leading zero byte about once in 200 keys, and the key it returns then fails to parse
// (in ssh2 and in OpenSSH). Such a pair is thrown away and another made.
import type Ssh2 from 'ssh2';
import { lazyRequire } from './lazy-require.js';

const ssh2 = lazyRequire<typeof Ssh2>('ssh2');

export function ed25519KeyPair(comment?: string): { private: string; public: string } {
  for (let i = 0; i < 32; i++) {
    const kp =
      comment === undefined
        ? ssh2().utils.generateKeyPairSync('ed25519')
        : ssh2().utils.generateKeyPairSync('ed25519', { comment });
    const pub = ssh2().utils.parseKey(kp.public);
    const priv = ssh2().utils.parseKey(kp.private);
    if (!(pub instanceof Error) && !(priv instanceof Error) && !Array.isArray(pub) && !Array.isArray(priv))
      return kp;
  }
  throw new Error('could not generate a valid ed25519 key pair');
}
