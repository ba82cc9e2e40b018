// Helpers for the audit tests (not used by the server). Structural types only, so this file
// builds with the rest of src/ without importing test/.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import { flushAddressUses } from './audit.addresses.js';
import { flushKeyUses } from '../../http/key-uses.js';

interface KitApp {
  deps: Pick<Deps, 'db' | 'log' | 'addressUses' | 'auditWrites' | 'keyUses'> & { db: Kysely<DB> };
}

/**
 * Waits until every audit write scheduled by replies so far has finished, then writes the queued
 * addresses and key uses (as the once-a-second batches would).
 */
export async function settleAudit(t: KitApp): Promise<void> {
  // onResponse runs once the reply has been written; give it its turn.
  await new Promise((r) => setImmediate(r));
  while (t.deps.auditWrites.pending.size > 0) await Promise.all([...t.deps.auditWrites.pending]);
  await flushKeyUses(t.deps);
  await flushAddressUses(t.deps);
}

export function auditRows(t: KitApp) {
  return t.deps.db.selectFrom('audit_logs').selectAll().orderBy('id').execute();
}

/** Every audit row and login address as text: what a reader of the database would see. */
export async function auditTableText(t: KitApp): Promise<string> {
  const addrs = await t.deps.db.selectFrom('user_ipaddrs').selectAll().execute();
  return JSON.stringify([await auditRows(t), addrs]);
}
