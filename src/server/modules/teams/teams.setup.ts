// Making teams and memberships, as plain functions of a transaction: the team service, the
// operator's `admin create-user --team` (accounts) and single sign-on (a groups claim mapped to a
// team and a role by name) all call these. Nothing here imports another module, so any module
// may import it without a cycle.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Permissions } from '../../../contract/permissions.js';
import * as repo from './teams.repo.js';
import { TeamErrors } from './teams.errors.js';

/** The roles every team starts with. Owner: everything; manager: everything; member: no team or billing writes. */
export const DEFAULT_ROLES: { name: string; permissions: Permissions | null }[] = [
  { name: 'owner', permissions: null },
  {
    name: 'manager',
    permissions: {
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
    },
  },
  {
    name: 'member',
    permissions: {
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
    },
  },
];

export const OWNER_ROLE = 'owner';

export interface TeamRef {
  id: number;
  name: string;
  accountUserId: number;
  ownerId: number | null;
}

function ref(t: repo.TeamRow): TeamRef {
  return { id: t.id, name: t.name, accountUserId: t.account_user_id!, ownerId: t.owner_id };
}

/** The live team of that name, or undefined. */
export async function teamByName(db: Kysely<DB>, name: string): Promise<TeamRef | undefined> {
  const t = await repo.teamByName(db, name);
  return t ? ref(t) : undefined;
}

/**
 * A team with its account and the default roles, owned by `ownerId` (a member with the owner
 * role). Throws a unique violation when the name is taken (the caller says so).
 */
export async function createTeamFor(
  db: Kysely<DB>,
  ownerId: number,
  name: string,
  now: number,
): Promise<TeamRef> {
  const id = await repo.insertTeam(db, name, now);
  const accountUserId = await repo.insertTeamAccount(db, id, name, now);
  let ownerRole = 0;
  for (const r of DEFAULT_ROLES) {
    const rid = await repo.insertRole(db, {
      teamId: id,
      name: r.name,
      permissions: r.permissions ? JSON.stringify(r.permissions) : null,
      given: null,
      now,
    });
    if (r.name === OWNER_ROLE) ownerRole = rid;
  }
  await repo.insertMember(db, id, ownerId, { id: ownerRole, name: OWNER_ROLE }, now);
  await repo.setOwner(db, id, ownerId);
  return { id, name, accountUserId, ownerId };
}

async function roleNamed(db: Kysely<DB>, teamId: number, roleName: string) {
  const role = await repo.roleByName(db, teamId, roleName);
  if (!role) throw TeamErrors.noSuchRole(`The team has no role named ${JSON.stringify(roleName)}`);
  return role;
}

/**
 * Makes the user a member of the team with the role; one who is a member already gets the role
 * (the owner keeps theirs). The owner role is the owner's alone.
 */
export async function addMember(
  db: Kysely<DB>,
  teamId: number,
  userId: number,
  roleName: string,
  now: number,
): Promise<void> {
  const team = await repo.teamById(db, teamId);
  if (!team) throw TeamErrors.notFound('No such team');
  if (team.owner_id === userId) return;
  if (roleName === OWNER_ROLE) throw TeamErrors.ownerFixed("The owner role is the team owner's alone");
  const role = await roleNamed(db, teamId, roleName);
  if (!(await repo.insertMember(db, teamId, userId, role, now)))
    await repo.setMemberRole(db, teamId, userId, role);
}

/** Changes a member's role (never the owner's, and never to owner). */
export async function setMemberRole(
  db: Kysely<DB>,
  teamId: number,
  userId: number,
  roleName: string,
  _now: number,
): Promise<void> {
  const team = await repo.teamById(db, teamId);
  if (!team) throw TeamErrors.notFound('No such team');
  if (team.owner_id === userId || roleName === OWNER_ROLE) throw TeamErrors.ownerFixed();
  const role = await roleNamed(db, teamId, roleName);
  if (!(await repo.setMemberRole(db, teamId, userId, role)))
    throw TeamErrors.notFound('That user is not a member of the team');
}

/**
 * Ends a membership (never the owner's): the member's team keys are revoked and their sessions
 * acting for the team go back to their own account, in the same transaction.
 */
export async function removeMember(
  db: Kysely<DB>,
  teamId: number,
  userId: number,
  now: number,
): Promise<number[]> {
  const team = await repo.teamById(db, teamId);
  if (!team) throw TeamErrors.notFound('No such team');
  if (team.owner_id === userId) throw TeamErrors.ownerFixed();
  if (!(await repo.deleteMember(db, teamId, userId)))
    throw TeamErrors.notFound('That user is not a member of the team');
  const keys = await repo.revokeTeamKeys(db, teamId, userId, now);
  await repo.sessionsLeaveTeam(db, teamId, userId);
  return keys;
}

/**
 * The operator's `admin create-user --team NAME`: the team of that name (made, with the user as
 * its owner, when there is none), the user a member of it (role member when it existed).
 */
export async function joinTeamByName(
  db: Kysely<DB>,
  name: string,
  userId: number,
  now: number,
): Promise<number> {
  const existing = await repo.teamByName(db, name);
  if (!existing) return (await createTeamFor(db, userId, name, now)).id;
  await addMember(db, existing.id, userId, 'member', now);
  return existing.id;
}
