// billing_ledger.volume_id: the volume a `volume` charge is for (null on every other row), so
// that a volume's charges are its host's earnings (show earnings' sto_earn, payouts) and appear
// per volume in the renter's charges (show invoices-v1 -c). Volume charges written before this
// migration carry none: they stay the renter's charges but are no host's earnings. Forward-only.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('billing_ledger').addColumn('volume_id', 'bigint').execute();
  await db.schema
    .createIndex('billing_ledger_volume_idx')
    .on('billing_ledger')
    .columns(['volume_id', 'period_end'])
    .where(sql.ref('volume_id'), 'is not', null)
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
