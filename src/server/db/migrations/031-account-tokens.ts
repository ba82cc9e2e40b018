// Single-use e-mailed links of the accounts module: a sign-up's e-mail verification (the account
// is made only when its link is followed, so no half-made account exists) and a password reset.
// A token is `selector + verifier`: the row is found by its selector and only the verifier's
// SHA-256 is stored, compared in constant time; `used_at` is set by a conditional UPDATE, so a
// link works once however many requests race with it. Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('account_tokens')
    .addColumn('selector', 'text', (c) => c.primaryKey())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('verifier_hash', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('user_id', 'integer')
    .addColumn('password_hash', 'text')
    .addColumn('full_name', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('account_tokens_email')
    .on('account_tokens')
    .columns(['email', 'purpose'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
