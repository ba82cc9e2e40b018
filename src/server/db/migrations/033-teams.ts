// Teams on the official wire (docs/teams.md): a team has an account of its own (a users row that
// holds its balance, instances and keys' work), an owner, roles with permissions, members with a
// role, and e-mailed invitations. Audit rows name the member who acted for a team.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

/** The roles every team starts with, as stored (permissions JSON in openrig's families; null: full). */
const DEFAULT_ROLES: { name: string; permissions: string | null }[] = [
  { name: 'owner', permissions: null },
  {
    name: 'manager',
    permissions: JSON.stringify({
      user: 'write',
      api_keys: 'write',
      ssh_keys: 'write',
      offers: 'read',
      instances: 'write',
      machines: 'write',
      maintenance: 'write',
      tfa: 'write',
      billing: 'write',
      webhooks: 'write',
      team: 'write',
    }),
  },
  {
    name: 'member',
    permissions: JSON.stringify({
      user: 'write',
      api_keys: 'write',
      ssh_keys: 'write',
      offers: 'read',
      instances: 'write',
      machines: 'read',
      maintenance: 'read',
      tfa: 'write',
      billing: 'read',
      team: 'read',
    }),
  },
];

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema.alterTable('teams').addColumn('account_user_id', 'bigint').execute();
  await db.schema.alterTable('teams').addColumn('owner_id', 'bigint').execute();
  await db.schema.alterTable('teams').addColumn('deleted_at', 'bigint').execute();
  await db.schema.alterTable('team_members').addColumn('role_id', 'bigint').execute();
  await db.schema.alterTable('audit_logs').addColumn('member_id', 'bigint').execute();

  await d
    .withId(db.schema.createTable('team_roles'))
    .addColumn('team_id', 'bigint', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('permissions', 'text')
    .addColumn('permissions_given', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('team_roles_name_uq')
    .unique()
    .on('team_roles')
    .columns(['team_id', 'name'])
    .execute();

  await d
    .withId(db.schema.createTable('team_invites'))
    .addColumn('team_id', 'bigint', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role_id', 'bigint', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('invited_by', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('accepted_at', 'bigint')
    .addColumn('accepted_by', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('team_invites_hash_uq')
    .unique()
    .on('team_invites')
    .column('token_hash')
    .execute();
  await db.schema
    .createIndex('team_invites_team_idx')
    .on('team_invites')
    .columns(['team_id', 'email'])
    .execute();

  // Teams made before this migration (by `admin create-user --team`) get what every team has: an
  // account, the default roles, an owner (their first member) and a role for each member.
  const teams = await db.selectFrom('teams').select(['id', 'name', 'created_at']).execute();
  for (const t of teams) {
    const account = await db
      .insertInto('users')
      .values({
        email: `team-${t.id}@teams.openrig.invalid`,
        full_name: t.name,
        password_hash: null,
        tfa_status: 'disabled',
        is_admin: 0,
        sms_fraud: 0,
        balance_micros: 0,
        created_at: t.created_at,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const roleIds: Record<string, number> = {};
    for (const r of DEFAULT_ROLES) {
      const row = await db
        .insertInto('team_roles')
        .values({
          team_id: t.id,
          name: r.name,
          permissions: r.permissions,
          permissions_given: null,
          created_at: t.created_at,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      roleIds[r.name] = Number(row.id);
    }
    const first = await db
      .selectFrom('team_members')
      .select('user_id')
      .where('team_id', '=', t.id)
      .orderBy('created_at')
      .orderBy('user_id')
      .executeTakeFirst();
    await db
      .updateTable('teams')
      .set({ account_user_id: Number(account.id), owner_id: first ? Number(first.user_id) : null })
      .where('id', '=', t.id)
      .execute();
    await db
      .updateTable('team_members')
      .set({ role_id: roleIds.member, role: 'member' })
      .where('team_id', '=', t.id)
      .execute();
    if (first)
      await db
        .updateTable('team_members')
        .set({ role_id: roleIds.owner, role: 'owner' })
        .where('team_id', '=', t.id)
        .where('user_id', '=', first.user_id)
        .execute();
  }
}

export async function down(): Promise<void> {
  // forward-only
}
