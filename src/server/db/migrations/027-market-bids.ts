// The market: interruptible (bid) instances, preempted by higher priority and resumed by
// themselves (docs/market.md, "Interruptible instances").
//
// - instances.bid_waiting: 1 while an interruptible instance wants to run but lacks priority on its
//   machine (outbid, preempted, or its bid is below the running one). Its intended_status is then
//   'stopped', so it holds no claim and the partial unique index "one active instance per
//   machine" (002) keeps deciding every race; the market resumes the best waiting bid when the
//   machine frees up. A partial index finds them.
// - instances.bid_at: when its current bid was set (ties between equal bids go to the earlier).
// - instances.preempt_until: the end of the grace period a preempted instance got (ms); its agent
//   sends SIGTERM and stops it at the latest then. Null: never preempted, or resumed since.
// - instances.preempted_by: the tier that took the machine ('owner', 'on-demand', 'bid').
// - machines.bid_to_win_dph: while a bid holds the machine, the lowest bid that takes it ($/h,
//   the running bid plus one micro-dollar); null while it is free or held by an on-demand or
//   owner rental. A versioned column: the offer index shows it as the offer's min_bid, and an
//   on-demand search sees such a machine as not rented.
// Forward-only.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';
import { createVersionUpdateTrigger, VERSIONED_COLUMNS } from './007-offer-index.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('bid_waiting', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('instances').addColumn('bid_at', 'bigint').execute();
  await db.schema.alterTable('instances').addColumn('preempt_until', 'bigint').execute();
  await db.schema.alterTable('instances').addColumn('preempted_by', 'text').execute();
  await sql`UPDATE instances SET bid_at = created_at WHERE is_bid = 1`.execute(db);
  await db.schema
    .createIndex('instances_bid_waiting_idx')
    .on('instances')
    .columns(['machine_id', 'id'])
    .where(sql.ref('bid_waiting'), '=', 1)
    .where(sql.ref('destroyed_at'), 'is', null)
    .execute();
  await db.schema.alterTable('machines').addColumn('bid_to_win_dph', 'double precision').execute();
  // Every column 017 versions, and this one.
  await createVersionUpdateTrigger(db, d, [...VERSIONED_COLUMNS, 'maint_until', 'bid_to_win_dph']);
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
