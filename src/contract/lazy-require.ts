// A CommonJS package loaded on its first use instead of at start-up (`serve` should be ready within
// a second; ssh2, argon2 and the database driver not in use cost a few hundred ms to load).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export function lazyRequire<T>(name: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= require(name) as T);
}
