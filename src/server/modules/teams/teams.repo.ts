// Every SQL statement of the teams module: teams and their accounts, roles, members, invitations,
// and the team keys and sessions a membership's end revokes or sends home.
import { sql, type Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';

export interface TeamRow {
  id: number;
  name: string;
  account_user_id: number | null;
  owner_id: number | null;
  deleted_at: number | null;
  created_at: number;
}

export function teamById(db: Kysely<DB>, id: number): Promise<TeamRow | undefined> {
  return db
    .selectFrom('teams')
    .selectAll()
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export function teamByName(db: Kysely<DB>, name: string): Promise<TeamRow | undefined> {
  return db
    .selectFrom('teams')
    .selectAll()
    .where('name', '=', name)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** A team row; throws a unique violation when the name is taken. */
export async function insertTeam(db: Kysely<DB>, name: string, now: number): Promise<number> {
  const r = await db
    .insertInto('teams')
    .values({ name, created_at: now, account_user_id: null, owner_id: null, deleted_at: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(r.id);
}

/** The team's own account: a users row no one signs in to (no password, an unreachable address). */
export async function insertTeamAccount(
  db: Kysely<DB>,
  teamId: number,
  name: string,
  now: number,
): Promise<number> {
  const r = await db
    .insertInto('users')
    .values({
      email: `team-${teamId}@teams.openrig.invalid`,
      full_name: name,
      password_hash: null,
      email_verified_at: null,
      tfa_status: 'disabled',
      phone_number: null,
      is_admin: 0,
      sms_fraud: 0,
      balance_micros: 0,
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .updateTable('teams')
    .set({ account_user_id: Number(r.id) })
    .where('id', '=', teamId)
    .execute();
  return Number(r.id);
}

export async function setOwner(db: Kysely<DB>, teamId: number, userId: number): Promise<void> {
  await db.updateTable('teams').set({ owner_id: userId }).where('id', '=', teamId).execute();
}

/** Marks the team destroyed and frees its name; false when it was already. */
export async function markDestroyed(db: Kysely<DB>, teamId: number, now: number): Promise<boolean> {
  const r = await db
    .updateTable('teams')
    .set({ deleted_at: now, name: sql<string>`name || ${`~destroyed~${teamId}`}` })
    .where('id', '=', teamId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

// Roles

export interface RoleRow {
  id: number;
  team_id: number;
  name: string;
  permissions: string | null;
  permissions_given: string | null;
  created_at: number;
}

export async function insertRole(
  db: Kysely<DB>,
  r: { teamId: number; name: string; permissions: string | null; given: string | null; now: number },
): Promise<number> {
  const row = await db
    .insertInto('team_roles')
    .values({
      team_id: r.teamId,
      name: r.name,
      permissions: r.permissions,
      permissions_given: r.given,
      created_at: r.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export function rolesOf(db: Kysely<DB>, teamId: number): Promise<(RoleRow & { members: number })[]> {
  return db
    .selectFrom('team_roles as r')
    .selectAll('r')
    .select((eb) =>
      eb
        .selectFrom('team_members as m')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('m.role_id', '=', 'r.id')
        .as('members'),
    )
    .where('r.team_id', '=', teamId)
    .orderBy('r.id')
    .execute() as Promise<(RoleRow & { members: number })[]>;
}

export function roleByName(db: Kysely<DB>, teamId: number, name: string): Promise<RoleRow | undefined> {
  return db
    .selectFrom('team_roles')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('name', '=', name)
    .executeTakeFirst();
}

export function roleById(db: Kysely<DB>, teamId: number, id: number): Promise<RoleRow | undefined> {
  return db
    .selectFrom('team_roles')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function updateRole(
  db: Kysely<DB>,
  teamId: number,
  id: number,
  set: { name?: string; permissions?: string | null; permissions_given?: string | null },
): Promise<boolean> {
  const r = await db
    .updateTable('team_roles')
    .set(set)
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (set.name !== undefined)
    await db
      .updateTable('team_members')
      .set({ role: set.name })
      .where('team_id', '=', teamId)
      .where('role_id', '=', id)
      .execute();
  return Number(r.numUpdatedRows) === 1;
}

/** Members and pending invitations that have the role. */
export async function roleUses(db: Kysely<DB>, teamId: number, roleId: number, now: number): Promise<number> {
  const m = await db
    .selectFrom('team_members')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('team_id', '=', teamId)
    .where('role_id', '=', roleId)
    .executeTakeFirstOrThrow();
  const i = await db
    .selectFrom('team_invites')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('team_id', '=', teamId)
    .where('role_id', '=', roleId)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(m.n) + Number(i.n);
}

export async function deleteRole(db: Kysely<DB>, teamId: number, id: number): Promise<boolean> {
  const r = await db
    .deleteFrom('team_roles')
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

// Members

export interface MemberRow {
  user_id: number;
  email: string;
  full_name: string;
  role_id: number | null;
  role_name: string | null;
  created_at: number;
}

export function membersOf(db: Kysely<DB>, teamId: number): Promise<MemberRow[]> {
  return db
    .selectFrom('team_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .leftJoin('team_roles as r', 'r.id', 'm.role_id')
    .select(['m.user_id', 'u.email', 'u.full_name', 'm.role_id', 'r.name as role_name', 'm.created_at'])
    .where('m.team_id', '=', teamId)
    .orderBy('m.created_at')
    .orderBy('m.user_id')
    .execute();
}

export function memberOf(db: Kysely<DB>, teamId: number, userId: number): Promise<MemberRow | undefined> {
  return db
    .selectFrom('team_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .leftJoin('team_roles as r', 'r.id', 'm.role_id')
    .select(['m.user_id', 'u.email', 'u.full_name', 'm.role_id', 'r.name as role_name', 'm.created_at'])
    .where('m.team_id', '=', teamId)
    .where('m.user_id', '=', userId)
    .executeTakeFirst();
}

/** Makes the user a member with the role; false when they were one already (nothing changed). */
export async function insertMember(
  db: Kysely<DB>,
  teamId: number,
  userId: number,
  role: { id: number; name: string },
  now: number,
): Promise<boolean> {
  const r = await db
    .insertInto('team_members')
    .values({ team_id: teamId, user_id: userId, role: role.name, role_id: role.id, created_at: now })
    .onConflict((oc) => oc.columns(['team_id', 'user_id']).doNothing())
    .returning('user_id')
    .executeTakeFirst();
  return r !== undefined;
}

export async function setMemberRole(
  db: Kysely<DB>,
  teamId: number,
  userId: number,
  role: { id: number; name: string },
): Promise<boolean> {
  const r = await db
    .updateTable('team_members')
    .set({ role_id: role.id, role: role.name })
    .where('team_id', '=', teamId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteMember(db: Kysely<DB>, teamId: number, userId: number): Promise<boolean> {
  const r = await db
    .deleteFrom('team_members')
    .where('team_id', '=', teamId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

export async function deleteAllMembers(db: Kysely<DB>, teamId: number): Promise<void> {
  await db.deleteFrom('team_members').where('team_id', '=', teamId).execute();
}

/** The teams the user is a member of, with their role. */
export function teamsOfUser(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('team_members as m')
    .innerJoin('teams as t', 't.id', 'm.team_id')
    .leftJoin('team_roles as r', 'r.id', 'm.role_id')
    .select(['t.id', 't.name', 't.owner_id', 'r.name as role'])
    .where('m.user_id', '=', userId)
    .where('t.deleted_at', 'is', null)
    .orderBy('t.name')
    .execute();
}

/**
 * What a team-context credential acts as: the team's account (every column of its users row), the
 * member's role and e-mail; undefined when the team is gone or the user is no longer a member.
 */
export function teamAuthRow(db: Kysely<DB>, teamId: number, memberId: number) {
  return db
    .selectFrom('teams as t')
    .innerJoin('team_members as m', (j) => j.onRef('m.team_id', '=', 't.id').on('m.user_id', '=', memberId))
    .innerJoin('users as a', 'a.id', 't.account_user_id')
    .innerJoin('users as p', 'p.id', 'm.user_id')
    .leftJoin('team_roles as r', 'r.id', 'm.role_id')
    .selectAll('a')
    .select([
      't.name as t_name',
      't.owner_id as t_owner',
      'r.name as r_name',
      'r.permissions as r_perms',
      'p.email as p_email',
    ])
    .where('t.id', '=', teamId)
    .where('t.deleted_at', 'is', null)
    .executeTakeFirst();
}

// Keys and sessions

/** Revokes the user's keys for the team (all members' with userId undefined); returns their ids. */
export async function revokeTeamKeys(
  db: Kysely<DB>,
  teamId: number,
  userId: number | undefined,
  now: number,
): Promise<number[]> {
  let q = db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('team_id', '=', teamId)
    .where('revoked_at', 'is', null);
  if (userId !== undefined) q = q.where('user_id', '=', userId);
  const rows = await q.returning('id').execute();
  return rows.map((r) => Number(r.id));
}

/** Revokes the team keys of every member who has the role; returns their ids. */
export async function revokeRoleKeys(
  db: Kysely<DB>,
  teamId: number,
  roleId: number,
  now: number,
): Promise<number[]> {
  const rows = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('team_id', '=', teamId)
    .where('revoked_at', 'is', null)
    .where('user_id', 'in', (eb) =>
      eb
        .selectFrom('team_members')
        .select('user_id')
        .where('team_id', '=', teamId)
        .where('role_id', '=', roleId),
    )
    .returning('id')
    .execute();
  return rows.map((r) => Number(r.id));
}

/** Sends the user's sessions acting for the team (all with userId undefined) back to their own account. */
export async function sessionsLeaveTeam(
  db: Kysely<DB>,
  teamId: number,
  userId: number | undefined,
): Promise<void> {
  let q = db.updateTable('sessions').set({ team_id: null }).where('team_id', '=', teamId);
  if (userId !== undefined) q = q.where('user_id', '=', userId);
  await q.execute();
}

/** Moves a live session to the team (null: the personal account); false when no such session. */
export async function setSessionTeam(
  db: Kysely<DB>,
  sessionId: number,
  userId: number,
  teamId: number | null,
): Promise<boolean> {
  const r = await db
    .updateTable('sessions')
    .set({ team_id: teamId })
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

// Invitations

export interface InviteRow {
  id: number;
  team_id: number;
  email: string;
  role_id: number;
  token_hash: string;
  invited_by: number;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  accepted_by: number | null;
  revoked_at: number | null;
}

/** Revokes the pending invitations of the address to the team (a newer one replaces them). */
export async function revokePendingInvites(
  db: Kysely<DB>,
  teamId: number,
  email: string | undefined,
  now: number,
): Promise<void> {
  let q = db
    .updateTable('team_invites')
    .set({ revoked_at: now })
    .where('team_id', '=', teamId)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null);
  if (email !== undefined) q = q.where('email', '=', email);
  await q.execute();
}

export async function insertInvite(
  db: Kysely<DB>,
  v: {
    teamId: number;
    email: string;
    roleId: number;
    tokenHash: string;
    invitedBy: number;
    now: number;
    expiresAt: number;
  },
): Promise<number> {
  const r = await db
    .insertInto('team_invites')
    .values({
      team_id: v.teamId,
      email: v.email,
      role_id: v.roleId,
      token_hash: v.tokenHash,
      invited_by: v.invitedBy,
      created_at: v.now,
      expires_at: v.expiresAt,
      accepted_at: null,
      accepted_by: null,
      revoked_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(r.id);
}

export function inviteByHash(db: Kysely<DB>, hash: string): Promise<InviteRow | undefined> {
  return db.selectFrom('team_invites').selectAll().where('token_hash', '=', hash).executeTakeFirst();
}

/** Spends the invitation: true for the one caller that finds it live (the database decides). */
export async function claimInvite(db: Kysely<DB>, id: number, userId: number, now: number): Promise<boolean> {
  const r = await db
    .updateTable('team_invites')
    .set({ accepted_at: now, accepted_by: userId })
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

// Money and instances of the team's account

export async function liveInstanceCount(db: Kysely<DB>, accountId: number): Promise<number> {
  const r = await db
    .selectFrom('instances')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', accountId)
    .where('destroyed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Takes `micros` off the user's balance when it covers them; false (nothing taken) otherwise. */
export async function debitIfCovered(db: Kysely<DB>, userId: number, micros: number): Promise<boolean> {
  const r = await db
    .updateTable('users')
    .set({ balance_micros: sql<number>`balance_micros - ${micros}` })
    .where('id', '=', userId)
    .where('balance_micros', '>=', micros)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function credit(db: Kysely<DB>, userId: number, micros: number): Promise<void> {
  await db
    .updateTable('users')
    .set({ balance_micros: sql<number>`balance_micros + ${micros}` })
    .where('id', '=', userId)
    .execute();
}

/** Empties the account's balance; returns what it held (0 when none or negative). */
export async function drainBalance(db: Kysely<DB>, userId: number): Promise<number> {
  const r = await db.selectFrom('users').select('balance_micros').where('id', '=', userId).executeTakeFirst();
  const held = Number(r?.balance_micros ?? 0);
  if (held <= 0) return 0;
  const u = await db
    .updateTable('users')
    .set({ balance_micros: sql<number>`balance_micros - ${held}` })
    .where('id', '=', userId)
    .where('balance_micros', '=', held)
    .executeTakeFirst();
  return Number(u.numUpdatedRows) === 1 ? held : 0;
}

/** The two ledger rows of a move of money between accounts (kind `transfer`). */
export async function insertTransfer(
  db: Kysely<DB>,
  fromId: number,
  toId: number,
  micros: number,
  now: number,
): Promise<void> {
  const row = (userId: number, amount: number) => ({
    user_id: userId,
    instance_id: null,
    kind: 'transfer',
    amount_micros: amount,
    period_start: now,
    period_end: now,
    created_at: now,
  });
  await db
    .insertInto('billing_ledger')
    .values([row(fromId, micros), row(toId, -micros)])
    .execute();
}

export function userByEmail(db: Kysely<DB>, email: string) {
  return db
    .selectFrom('users')
    .select(['id', 'email', 'full_name'])
    .where('email', '=', email)
    .executeTakeFirst();
}
