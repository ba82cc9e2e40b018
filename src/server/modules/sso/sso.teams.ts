// Keeping an account's team memberships in step with its provider's groups claim, at each sign-in:
// every team the provider's mapping names is either joined with its mapped role (some listed group
// maps to it) or left (none does); a team the mapping does not name is never touched, so
// memberships granted in openrig itself stay. Membership is the teams module's: its service adds
// a member with a role by name (a member already gets the role; the owner's role never changes)
// and removes one (revoking their team keys and team sessions; never the owner).
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.js';
import type { OidcGroupMapping } from '../../config.oidc.js';
import { AppError } from '../../errors.js';
import { addMember, removeMember, teamByName } from '../teams/teams.service.js';

/**
 * The role each mapped team should give, from the groups the provider listed: the first mapping
 * (in the configured order) of a listed group names the team's role; a mapped team no listed
 * group reaches maps to null (leave it). Pure.
 */
export function desiredTeams(mappings: OidcGroupMapping[], groups: string[]): Map<string, string | null> {
  const listed = new Set(groups);
  const out = new Map<string, string | null>();
  for (const m of mappings) if (!out.has(m.team)) out.set(m.team, null);
  for (const m of mappings) if (listed.has(m.group) && out.get(m.team) === null) out.set(m.team, m.role);
  return out;
}

export interface TeamChanges {
  /** Teams the user is a member of now, with the role (given now or confirmed). */
  member: { team: string; role: string }[];
  /** Teams the user was removed from now. */
  left: string[];
  /** Mapped teams that could not be applied: no team of that name, or no role of that name. */
  skipped: { team: string; why: string }[];
}

/**
 * Applies desiredTeams to the user's memberships, in the caller's transaction. A mapping the
 * teams cannot take (a team or role that does not exist) is skipped and reported, not fatal: the
 * operator's typo must not lock everyone out. Teams are made by people, not by sign-ins.
 */
export async function syncTeams(
  db: Kysely<DB>,
  log: Logger,
  userId: number,
  mappings: OidcGroupMapping[],
  groups: string[],
  now: number,
): Promise<TeamChanges> {
  const changes: TeamChanges = { member: [], left: [], skipped: [] };
  for (const [name, role] of desiredTeams(mappings, groups)) {
    const team = await teamByName(db, name);
    if (!team) {
      changes.skipped.push({ team: name, why: 'no team of this name' });
      continue;
    }
    if (role !== null) {
      try {
        await addMember(db, team.id, userId, role, now);
        changes.member.push({ team: name, role });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        changes.skipped.push({ team: name, why: err.message });
      }
    } else {
      try {
        await removeMember(db, team.id, userId, now);
        changes.left.push(name);
      } catch (err) {
        // Not a member (nothing to do), or the team's owner (never removed).
        if (!(err instanceof AppError)) throw err;
      }
    }
  }
  if (changes.skipped.length > 0)
    log.warn(
      { user_id: userId, skipped: changes.skipped },
      'oidc group mappings skipped: fix OPENRIG_OIDC_PROVIDERS or make the teams',
    );
  return changes;
}

/** The groups claim as a list of strings: a list, or one string; anything else lists none. */
export function groupsOf(claim: unknown): string[] {
  if (typeof claim === 'string') return [claim];
  if (Array.isArray(claim)) return claim.filter((g): g is string => typeof g === 'string');
  return [];
}
