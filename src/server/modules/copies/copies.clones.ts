// What the volumes module asks of copies for volume clones (docs/volumes.md): a clone is a copy
// from one volume into a new one, recorded here with its one-time key; a volume being read by a
// copy is not deleted, and a copy into a deleted volume ends with it.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import { encryptSecret } from '../../crypto.js';
import { ed25519KeyPair } from '../../../contract/ssh-keygen.js';
import { keyFingerprint } from './copies.service.js';
import * as repo from './copies.repo.js';

/** A live volume with its machine's state (a clone's source); undefined when none. */
export const cloneSource = (db: Kysely<DB>, id: number) => repo.volumeEnd(db, id);

/**
 * Records the copy of a clone, in the caller's transaction: volume `srcId`'s files (on
 * `srcMachine`) into new volume `dstId` (on `dstMachine`), with a fresh one-time key; its id.
 */
export function recordClone(
  db: Kysely<DB>,
  deps: Deps,
  c: {
    userId: number;
    srcId: number;
    srcMachine: number;
    dstId: number;
    dstMachine: number;
    compress: boolean;
    now: number;
  },
): Promise<number> {
  const kp = ed25519KeyPair('openrig-clone');
  return repo.insertCopy(db, {
    user_id: c.userId,
    src_kind: 'volume',
    src_id: c.srcId,
    src_machine_id: c.srcMachine,
    src_path: '/',
    dst_kind: 'volume',
    dst_id: c.dstId,
    dst_machine_id: c.dstMachine,
    dst_path: '/',
    excludes: '[]',
    compress: c.compress ? 1 : 0,
    key_enc: encryptSecret(deps.config.secretKey, kp.private),
    key_fp: keyFingerprint(kp.public),
    created_at: c.now,
  });
}

/** The active copy reading this volume, if any (the volume is not deleted meanwhile). */
export const copyReadingVolume = (db: Kysely<DB>, id: number) => repo.activeCopyFrom(db, id);

/** Ends the active copies into a deleted volume; the source machines, whose agents stop them. */
export async function endCopiesIntoVolume(db: Kysely<DB>, id: number, now: number): Promise<number[]> {
  return (await repo.cancelCopiesInto(db, id, now)).map((r) => Number(r.src_machine_id));
}
