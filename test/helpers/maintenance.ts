// Fixtures for the maintenance tests: machines and instances inserted directly, so these
// tests depend on the tables only, not on the instances API.
import type { Kysely } from 'kysely';
import type { DB } from '../../src/server/db/schema.js';

export async function insertMachines(
  db: Kysely<DB>,
  hostId: number,
  count: number,
  now = Date.now(),
): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i += 100) {
    const rows = Array.from({ length: Math.min(100, count - i) }, (_, k) => ({
      host_id: hostId,
      hostname: `rig-${i + k}`,
      gpu_name: 'RTX 4090',
      num_gpus: 2,
      created_at: now,
      listed: 1,
      online_state: 'online',
    }));
    const res = await db
      .insertInto('machines')
      .values(rows as any)
      .returning('id')
      .execute();
    ids.push(...res.map((r) => r.id));
  }
  return ids;
}

export interface InstanceSpec {
  machineId: number;
  userId: number;
  intended?: 'running' | 'stopped';
  actual?: string | null;
  destroyed?: boolean;
}

export async function insertInstances(
  db: Kysely<DB>,
  specs: InstanceSpec[],
  now = Date.now(),
): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < specs.length; i += 100) {
    const rows = specs.slice(i, i + 100).map((s) => ({
      machine_id: s.machineId,
      user_id: s.userId,
      image: 'ubuntu:22.04',
      disk: 10,
      dph_compute: 0.5,
      dph_disk: 0.01,
      intended_status: s.intended ?? 'running',
      actual_status: s.actual === undefined ? (s.intended === 'stopped' ? 'stopped' : 'running') : s.actual,
      created_at: now,
      billed_until: now,
      destroyed_at: s.destroyed ? now : null,
    }));
    const res = await db
      .insertInto('instances')
      .values(rows as any)
      .returning('id')
      .execute();
    ids.push(...res.map((r) => r.id));
  }
  return ids;
}

/** Plain users (clients) inserted directly; returns their ids. */
export async function insertUsers(
  db: Kysely<DB>,
  count: number,
  prefix: string,
  now = Date.now(),
): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i += 200) {
    const rows = Array.from({ length: Math.min(200, count - i) }, (_, k) => ({
      email: `${prefix}-${i + k}@example.com`,
      full_name: `Client ${i + k}`,
      created_at: now,
      email_verified_at: now,
    }));
    const res = await db
      .insertInto('users')
      .values(rows as any)
      .returning('id')
      .execute();
    ids.push(...res.map((r) => r.id));
  }
  return ids;
}
