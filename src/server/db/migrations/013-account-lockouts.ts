// Per-account failure counting, across every channel and independent of the caller's address:
// failed passwords and failed second factors (any method, backup codes included) of one account
// share one counter, keyed by the account's lower-cased e-mail (so an e-mail without an account
// counts and locks exactly like one with an account, and the lock reveals nothing). Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('account_lockouts')
    .addColumn('subject', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('window_started_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('lock_level', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
