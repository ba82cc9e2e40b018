// Every SQL statement of the quotas module: team and member limits, what runs and what was spent,
// API key budgets, budget alerts, subaccounts and credit transfers.
import { sql, type Kysely, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { QuotaLimitsTable } from '../../db/tables/quotas.js';
import type { InstanceRow } from '../billing/billing.service.js';
import type { SqlDialect } from '../../db/dialect.js';

export type LimitRow = Selectable<QuotaLimitsTable>;

/** The roles that may set a team's limits. */
export const MANAGING_ROLES = ['owner', 'manager'] as const;

/** A member's role in a team, with the role's permissions (JSON; null: every one); null: no member. */
export async function memberRole(
  db: Kysely<DB>,
  teamId: number,
  userId: number,
): Promise<{ role: string; permissions: string | null } | null> {
  const r = await db
    .selectFrom('team_members as tm')
    .leftJoin('team_roles as r', 'r.id', 'tm.role_id')
    .select(['tm.role', 'r.permissions'])
    .where('tm.team_id', '=', teamId)
    .where('tm.user_id', '=', userId)
    .executeTakeFirst();
  return r ? { role: r.role, permissions: r.permissions ?? null } : null;
}

/** The team's owner (teams.owner_id) with their e-mail, when it has one. */
export function teamOwner(db: Kysely<DB>, teamId: number) {
  return db
    .selectFrom('teams as t')
    .innerJoin('users as u', 'u.id', 't.owner_id')
    .select(['u.id as user_id', 'u.email'])
    .where('t.id', '=', teamId)
    .executeTakeFirst();
}

export async function teamName(db: Kysely<DB>, teamId: number): Promise<string | null> {
  const r = await db.selectFrom('teams').select('name').where('id', '=', teamId).executeTakeFirst();
  return r ? r.name : null;
}

/** The teams of `userId` (not destroyed) with its role in each, in id order. */
export function teamsOf(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('team_members as tm')
    .innerJoin('teams as t', 't.id', 'tm.team_id')
    .select(['tm.team_id', 'tm.role'])
    .where('tm.user_id', '=', userId)
    .where('t.deleted_at', 'is', null)
    .orderBy('tm.team_id')
    .execute();
}

export function teamMembers(db: Kysely<DB>, teamId: number) {
  return db
    .selectFrom('team_members as tm')
    .innerJoin('users as u', 'u.id', 'tm.user_id')
    .select(['tm.user_id', 'u.email', 'tm.role'])
    .where('tm.team_id', '=', teamId)
    .orderBy('tm.user_id')
    .execute();
}

/** The members of a team whose role is one of `roles`, with their e-mail. */
export function membersWithRoles(db: Kysely<DB>, teamId: number, roles: readonly string[]) {
  return db
    .selectFrom('team_members as tm')
    .innerJoin('users as u', 'u.id', 'tm.user_id')
    .select(['tm.user_id', 'u.email'])
    .where('tm.team_id', '=', teamId)
    .where('tm.role', 'in', [...roles])
    .orderBy('tm.user_id')
    .execute();
}

export async function userIdByEmail(db: Kysely<DB>, email: string): Promise<number | null> {
  const r = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
  return r ? Number(r.id) : null;
}

export function userById(db: Kysely<DB>, id: number) {
  return db.selectFrom('users').select(['id', 'email']).where('id', '=', id).executeTakeFirst();
}

export function limitsOfTeam(db: Kysely<DB>, teamId: number): Promise<LimitRow[]> {
  return db.selectFrom('quota_limits').selectAll().where('team_id', '=', teamId).execute();
}

export function limitRow(db: Kysely<DB>, teamId: number, userId: number): Promise<LimitRow | undefined> {
  return db
    .selectFrom('quota_limits')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export async function upsertLimits(
  db: Kysely<DB>,
  row: {
    team_id: number;
    user_id: number;
    max_gpus: number | null;
    max_dph_micros: number | null;
    month_budget_micros: number | null;
    updated_by: number;
    updated_at: number;
  },
): Promise<void> {
  await db
    .insertInto('quota_limits')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['team_id', 'user_id']).doUpdateSet({
        max_gpus: row.max_gpus,
        max_dph_micros: row.max_dph_micros,
        month_budget_micros: row.month_budget_micros,
        updated_by: row.updated_by,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

export async function deleteLimits(db: Kysely<DB>, teamId: number, userId: number): Promise<void> {
  await db.deleteFrom('quota_limits').where('team_id', '=', teamId).where('user_id', '=', userId).execute();
}

/**
 * Locks a scope's limit row for the rest of the caller's transaction (a write of `holds`) and
 * returns it; undefined when the scope has no limits. Creates checked against one row wait for
 * each other here, so each counts what the ones before it committed.
 */
export function lockLimit(db: Kysely<DB>, teamId: number, userId: number): Promise<LimitRow | undefined> {
  return db
    .updateTable('quota_limits')
    .set({ holds: sql`holds + 1` })
    .where('team_id', '=', teamId)
    .where('user_id', '=', userId)
    .returningAll()
    .executeTakeFirst();
}

/** A live instance that runs or is meant to, or a bid waiting to: what "running" limits count. */
const running = sql<boolean>`i.destroyed_at is null and (i.intended_status = 'running' or i.bid_waiting = 1)`;

/** The instances a member created for a team (their origins): a member's limits count these. */
const createdBy = (db: Kysely<DB>, teamId: number, memberId: number) =>
  db
    .selectFrom('quota_instance_origins as o')
    .select('o.instance_id')
    .where('o.team_id', '=', teamId)
    .where('o.member_id', '=', memberId);

/** GPUs and $/hour (micro-dollars) of a team's running instances, or one member's among them. */
export async function runningUsage(
  db: Kysely<DB>,
  teamId: number,
  memberId: number | null,
): Promise<{ gpus: number; dphMicros: number }> {
  let q = db
    .selectFrom('instances as i')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .select([
      sql<number>`coalesce(sum(m.num_gpus), 0)`.as('gpus'),
      sql<number>`coalesce(sum(i.dph_compute + i.dph_disk), 0)`.as('dph'),
    ])
    .where('i.team_id', '=', teamId)
    .where(running);
  if (memberId !== null) q = q.where('i.id', 'in', createdBy(db, teamId, memberId));
  const r = await q.executeTakeFirst();
  return { gpus: Number(r?.gpus ?? 0), dphMicros: Math.round(Number(r?.dph ?? 0) * 1e6) };
}

/** runningUsage of every member of a team who has any, by user id. */
export function runningByMember(db: Kysely<DB>, teamId: number) {
  return db
    .selectFrom('instances as i')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .innerJoin('quota_instance_origins as o', 'o.instance_id', 'i.id')
    .select([
      'o.member_id',
      sql<number>`coalesce(sum(m.num_gpus), 0)`.as('gpus'),
      sql<number>`coalesce(sum(i.dph_compute + i.dph_disk), 0)`.as('dph'),
    ])
    .where('i.team_id', '=', teamId)
    .where('o.member_id', 'is not', null)
    .where(running)
    .groupBy('o.member_id')
    .execute();
}

/**
 * Compute and disk charges of a team's instances (or a member's) whose period ended after `from`;
 * a team's own also counts the storage charges of the volumes its account holds (a volume records
 * no member: a member's spend is their instances').
 */
export async function monthSpend(
  db: Kysely<DB>,
  teamId: number,
  memberId: number | null,
  from: number,
): Promise<number> {
  let q = db
    .selectFrom('billing_ledger as l')
    .innerJoin('instances as i', 'i.id', 'l.instance_id')
    .select(sql<number>`coalesce(sum(l.amount_micros), 0)`.as('micros'))
    .where('i.team_id', '=', teamId)
    .where('l.kind', 'in', ['compute', 'disk'])
    .where('l.period_end', '>', from);
  if (memberId !== null) q = q.where('i.id', 'in', createdBy(db, teamId, memberId));
  const r = await q.executeTakeFirst();
  if (memberId !== null) return Number(r?.micros ?? 0);
  const v = await db
    .selectFrom('billing_ledger as l')
    .innerJoin('teams as t', 't.account_user_id', 'l.user_id')
    .select(sql<number>`coalesce(sum(l.amount_micros), 0)`.as('micros'))
    .where('t.id', '=', teamId)
    .where('l.kind', '=', 'volume')
    .where('l.period_end', '>', from)
    .executeTakeFirst();
  return Number(r?.micros ?? 0) + Number(v?.micros ?? 0);
}

export function spendByMember(db: Kysely<DB>, teamId: number, from: number) {
  return db
    .selectFrom('billing_ledger as l')
    .innerJoin('instances as i', 'i.id', 'l.instance_id')
    .innerJoin('quota_instance_origins as o', 'o.instance_id', 'i.id')
    .select(['o.member_id', sql<number>`coalesce(sum(l.amount_micros), 0)`.as('micros')])
    .where('i.team_id', '=', teamId)
    .where('o.member_id', 'is not', null)
    .where('l.kind', 'in', ['compute', 'disk'])
    .where('l.period_end', '>', from)
    .groupBy('o.member_id')
    .execute();
}

/** Charges of the instances a key created whose period ended after `from`. */
export async function keySpend(db: Kysely<DB>, keyId: number, from: number): Promise<number> {
  const r = await db
    .selectFrom('billing_ledger as l')
    .innerJoin('quota_instance_origins as o', 'o.instance_id', 'l.instance_id')
    .select(sql<number>`coalesce(sum(l.amount_micros), 0)`.as('micros'))
    .where('o.api_key_id', '=', keyId)
    .where('l.kind', 'in', ['compute', 'disk'])
    .where('l.period_end', '>', from)
    .executeTakeFirst();
  return Number(r?.micros ?? 0);
}

/** The account's own keys (not revoked, not instance keys) with their budget, if any. */
export function keysWithLimits(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('api_keys as k')
    .leftJoin('api_key_limits as l', 'l.api_key_id', 'k.id')
    .select(['k.id', 'k.name', 'l.month_budget_micros'])
    .where('k.user_id', '=', userId)
    .where('k.kind', '=', 'user')
    .where('k.revoked_at', 'is', null)
    .orderBy('k.id')
    .execute();
}

export function ownKey(db: Kysely<DB>, userId: number, keyId: number) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name'])
    .where('id', '=', keyId)
    .where('user_id', '=', userId)
    .where('kind', '=', 'user')
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function upsertKeyLimit(
  db: Kysely<DB>,
  row: { api_key_id: number; user_id: number; month_budget_micros: number; updated_at: number },
): Promise<void> {
  await db
    .insertInto('api_key_limits')
    .values(row)
    .onConflict((oc) =>
      oc
        .column('api_key_id')
        .doUpdateSet({ month_budget_micros: row.month_budget_micros, updated_at: row.updated_at }),
    )
    .execute();
}

export async function deleteKeyLimit(db: Kysely<DB>, keyId: number): Promise<void> {
  await db.deleteFrom('api_key_limits').where('api_key_id', '=', keyId).execute();
}

/** lockLimit for a key's budget. */
export function lockKeyLimit(db: Kysely<DB>, keyId: number) {
  return db
    .updateTable('api_key_limits')
    .set({ holds: sql`holds + 1` })
    .where('api_key_id', '=', keyId)
    .returning(['api_key_id', 'user_id', 'month_budget_micros'])
    .executeTakeFirst();
}

export async function insertOrigin(
  db: Kysely<DB>,
  row: {
    instance_id: number;
    api_key_id: number | null;
    team_id: number | null;
    member_id: number | null;
    created_at: number;
  },
): Promise<void> {
  await db.insertInto('quota_instance_origins').values(row).execute();
}

/** Every team or member scope with a month budget. */
export function budgetedScopes(db: Kysely<DB>) {
  return db
    .selectFrom('quota_limits')
    .select(['team_id', 'user_id', 'month_budget_micros'])
    .where('month_budget_micros', 'is not', null)
    .orderBy('team_id')
    .orderBy('user_id')
    .execute();
}

export function budgetedKeys(db: Kysely<DB>) {
  return db
    .selectFrom('api_key_limits as l')
    .innerJoin('api_keys as k', 'k.id', 'l.api_key_id')
    .innerJoin('users as u', 'u.id', 'l.user_id')
    .select(['l.api_key_id', 'l.user_id', 'l.month_budget_micros', 'k.name', 'u.email'])
    .orderBy('l.api_key_id')
    .execute();
}

/** Records a budget alert once per scope, month and level: true when this call recorded it. */
export async function insertAlert(
  db: Kysely<DB>,
  row: { scope: string; month: string; level: number; spent_micros: number; created_at: number },
): Promise<boolean> {
  const r = await db
    .insertInto('quota_alerts')
    .values(row)
    .onConflict((oc) => oc.columns(['scope', 'month', 'level']).doNothing())
    .returning('level')
    .executeTakeFirst();
  return r !== undefined;
}

/** The live instances meant to run of a team (or one member of it), or that a key created. */
export function runningInstancesIn(
  db: Kysely<DB>,
  scope: { teamId: number; memberId: number | null } | { keyId: number },
): Promise<InstanceRow[]> {
  let q = db
    .selectFrom('instances')
    .selectAll('instances')
    .where('instances.destroyed_at', 'is', null)
    .where('instances.intended_status', '=', 'running');
  if ('keyId' in scope) {
    q = q.where('instances.id', 'in', (eb) =>
      eb.selectFrom('quota_instance_origins').select('instance_id').where('api_key_id', '=', scope.keyId),
    );
  } else {
    q = q.where('instances.team_id', '=', scope.teamId);
    if (scope.memberId !== null)
      q = q.where('instances.id', 'in', createdBy(db, scope.teamId, scope.memberId));
  }
  return q.orderBy('instances.id').execute();
}

/** Stops a live instance meant to run (intended → stopped, actual → `actual`); true when it moved. */
export async function stopRunning(
  db: Kysely<DB>,
  id: number,
  actual: string | null,
  msg: string,
): Promise<boolean> {
  const res = await db
    .updateTable('instances')
    .set({ intended_status: 'stopped', actual_status: actual, status_msg: msg })
    .where('id', '=', id)
    .where('intended_status', '=', 'running')
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

// Subaccounts and transfers.

/** Advisory lock namespace of the balances a transfer moves ("xfer"). */
const TRANSFER_LOCK_NS = 0x78666572;

/**
 * Serialises the rest of the transaction against other transfers touching either account, both
 * taken in id order: A→B and B→A at once wait for each other instead of deadlocking.
 */
export function lockTransferAccounts(
  db: Kysely<DB>,
  dialect: SqlDialect,
  ids: readonly number[],
): Promise<void> {
  return dialect.lockKeys(db, TRANSFER_LOCK_NS, ids);
}

export function subaccountsOf(db: Kysely<DB>, parentId: number) {
  return db
    .selectFrom('subaccounts as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .select([
      'u.id',
      'u.email',
      'u.full_name',
      'u.balance_micros',
      'u.email_verified_at',
      's.username',
      's.host_only',
      's.parent_id',
      's.created_at',
    ])
    .where('s.parent_id', '=', parentId)
    .orderBy('u.id')
    .execute();
}

/**
 * Takes `micros` off the user's balance only while it holds that much (one conditional UPDATE):
 * the balance afterwards, or null when it does not.
 */
export async function debitIfCovered(db: Kysely<DB>, userId: number, micros: number): Promise<number | null> {
  const r = await db
    .updateTable('users')
    .set({ balance_micros: sql`balance_micros - ${micros}` })
    .where('id', '=', userId)
    .where('balance_micros', '>=', micros)
    .returning('balance_micros')
    .executeTakeFirst();
  return r ? Number(r.balance_micros) : null;
}

export async function credit(db: Kysely<DB>, userId: number, micros: number): Promise<number | null> {
  const r = await db
    .updateTable('users')
    .set({ balance_micros: sql`balance_micros + ${micros}` })
    .where('id', '=', userId)
    .returning('balance_micros')
    .executeTakeFirst();
  return r ? Number(r.balance_micros) : null;
}
