// Subaccounts, team quotas and budgets, API key budgets (the quotas module).
// subaccounts: an account made by another (its parent) with `create subaccount`; one level deep.
// quota_limits: a team's limits (user_id 0: the team as a whole) and a member's in that team:
//   GPUs running at once, $/hour running at once, a spend budget per calendar month (UTC). A
//   create locks its scopes' rows (a conditional UPDATE of `holds`) before it counts what runs,
//   so concurrent creates against one limit are decided one after the other by the database.
// api_key_limits: an API key's own spend budget per calendar month.
// quota_instance_origins: who created an instance: the API key (what a key's budget counts) and,
//   in a team context, the member acting for the team (what a member's limits count: the
//   instance itself belongs to the team's account).
// quota_alerts: the 80 % and 100 % warnings, once per scope and month (the primary key decides).
// Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema
    .createTable('subaccounts')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('parent_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('username', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('host_only', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('subaccounts_parent_idx').on('subaccounts').column('parent_id').execute();

  await db.schema
    .createTable('quota_limits')
    .addColumn('team_id', 'bigint', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    // 0: the team as a whole; else the member's own limits within the team.
    .addColumn('user_id', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('max_gpus', 'integer')
    .addColumn('max_dph_micros', 'bigint')
    .addColumn('month_budget_micros', 'bigint')
    // Bumped by every create checked against the row: the row lock that orders them.
    .addColumn('holds', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_by', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('quota_limits_pk', ['team_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('api_key_limits')
    .addColumn('api_key_id', 'bigint', (c) => c.primaryKey().references('api_keys.id').onDelete('cascade'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('month_budget_micros', 'bigint', (c) => c.notNull())
    .addColumn('holds', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('quota_instance_origins')
    .addColumn('instance_id', 'bigint', (c) => c.primaryKey().references('instances.id').onDelete('cascade'))
    .addColumn('api_key_id', 'bigint')
    .addColumn('team_id', 'bigint')
    .addColumn('member_id', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('quota_instance_origins_member_idx')
    .on('quota_instance_origins')
    .columns(['team_id', 'member_id'])
    .execute();
  await db.schema
    .createIndex('quota_instance_origins_key_idx')
    .on('quota_instance_origins')
    .column('api_key_id')
    .execute();

  await db.schema
    .createTable('quota_alerts')
    // 'team:T' (the team), 'member:T:U' or 'key:K'
    .addColumn('scope', 'text', (c) => c.notNull())
    // 'YYYY-MM' (UTC)
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('spent_micros', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('quota_alerts_pk', ['scope', 'month', 'level'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
