// machines.maint_until: the latest end of the machine's maintenance windows that are not
// cancelled (null: none ever). The scheduling and cancelling transactions keep it; the offer
// index reads it with the rest of the row (it is a versioned column, so a change of it reaches
// every process's index like any other), and a search asks the database for the live windows of
// only those machines of its page whose maint_until is still ahead: most pages, none. Forward-only.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';
import { createVersionUpdateTrigger, VERSIONED_COLUMNS } from './007-offer-index.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema.alterTable('machines').addColumn('maint_until', 'bigint').execute();
  await createVersionUpdateTrigger(db, d, [...VERSIONED_COLUMNS, 'maint_until']);
  // After the trigger: machines with windows get a new version, so any index already loaded
  // reads their new column.
  await sql`UPDATE machines SET maint_until = (SELECT max(w.end_time) FROM maintenance_windows w WHERE w.machine_id = machines.id AND w.canceled_at IS NULL) WHERE EXISTS (SELECT 1 FROM maintenance_windows w WHERE w.machine_id = machines.id AND w.canceled_at IS NULL)`.execute(
    db,
  );
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
