// payouts: what each host is paid for its machines' earnings over a period (billing's payout
// run). A payout covers the host's charges (ledger compute and disk rows of instances on its
// machines) whose billed period ended in (period_start, period_end]; the next one starts where
// the last one that did not fail ended, so every charge is paid once. gross = net + cut (the
// platform fee). The unique index on (host_id, period_start) among the payouts that did not fail
// decides between two runs at once (several `serve` processes): one payout per host and start.
// payout_destinations: where a host wants to be paid (paypal_manual or wise_manual with an
// e-mail, or internal with a free-text account, e.g. a university's cost centre), one row a host.
// Forward-only.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('payouts'))
    .addColumn('host_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('period_end', 'bigint', (c) => c.notNull())
    .addColumn('gross_micros', 'bigint', (c) => c.notNull())
    .addColumn('cut_percent', 'double precision', (c) => c.notNull())
    .addColumn('cut_micros', 'bigint', (c) => c.notNull())
    .addColumn('net_micros', 'bigint', (c) => c.notNull())
    // pending → paid | failed
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
    // paypal_manual | wise_manual | internal | none (the host set no destination yet)
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('destination', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('note', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('settled_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('payouts_host_start_uq')
    .unique()
    .on('payouts')
    .columns(['host_id', 'period_start'])
    .where(sql.ref('status'), '<>', 'failed')
    .execute();
  await db.schema.createIndex('payouts_status_idx').on('payouts').columns(['status', 'id']).execute();
  await db.schema
    .createTable('payout_destinations')
    .addColumn('host_id', 'bigint', (c) => c.primaryKey().references('users.id'))
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
