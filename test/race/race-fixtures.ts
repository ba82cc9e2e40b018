// Fixtures shared by the race and crash tests: listed offers, SSH keys, 2FA helpers.
import type { Kysely } from 'kysely';
import { generateKeyPairSync } from 'node:crypto';
import type { DB } from '../../src/server/db/schema.js';

/** Inserts `n` listed, online, free offers of `hostId`; returns their ids. */
export async function insertOffers(
  db: Kysely<DB>,
  hostId: number,
  n: number,
  now = Date.now(),
): Promise<number[]> {
  const rows = Array.from({ length: n }, (_, i) => ({
    host_id: hostId,
    hostname: `race${i}`,
    gpu_name: 'RTX 4090',
    num_gpus: 1,
    gpu_ram: 24576,
    disk_space: 500,
    direct_port_count: 20,
    verified: 1,
    listed: 1,
    rented: 0,
    price_gpu_dph: 0.4,
    price_disk_gb_month: 0.1,
    reliability: 0.99,
    dlperf: 80,
    online_state: 'online',
    last_heartbeat_at: now,
    created_at: now,
  }));
  const out: number[] = [];
  for (let i = 0; i < rows.length; i += 200) {
    const r = await db
      .insertInto('machines')
      .values(rows.slice(i, i + 200) as never)
      .returning('id')
      .execute();
    out.push(...r.map((x) => Number(x.id)));
  }
  return out;
}

/**
 * A fresh ed25519 public key line, built from node:crypto. (ssh2's generateKeyPairSync drops a
 * leading zero byte of the key about once in 256 keys, making a 31-byte key the parser rightly
 * refuses: tests built on it fail at random.)
 */
export function publicKey(): string {
  const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([str(Buffer.from('ssh-ed25519')), str(raw)]).toString('base64')} race@openrig`;
}
