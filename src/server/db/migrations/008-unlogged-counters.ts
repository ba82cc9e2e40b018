// Rate-limit counters need not survive a crash, so on PostgreSQL their table skips the
// WAL (UNLOGGED: no log write and no fsync wait per limited request; emptied after a crash, which
// only forgives the current window). SQLite keeps them in a scratch file instead
// (platform.rate-limit.ts). Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d.setUnlogged(db, 'rate_limit_counters');
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
