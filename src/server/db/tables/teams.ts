// Table types of the teams module (migration 033-teams): roles and invitations. The team itself,
// its members and their keys are foundation tables (foundation.ts). Times are epoch ms.
import type { Generated } from 'kysely';

/** A role of one team: a name and the permissions a member with it acts within. */
export interface TeamRolesTable {
  id: Generated<number>;
  team_id: number;
  /** Unique within the team. */
  name: string;
  /** JSON of openrig's families ({family: 'read'|'write'}); null: every permission. */
  permissions: string | null;
  /** JSON: the permissions exactly as given (the marketplace format); null for the defaults. */
  permissions_given: string | null;
  created_at: number;
}

/** An e-mailed invitation to join a team with a role; single use, expiring. */
export interface TeamInvitesTable {
  id: Generated<number>;
  team_id: number;
  /** Lower-cased. */
  email: string;
  role_id: number;
  /** SHA-256 (hex) of the token in the link; the token itself is never stored. */
  token_hash: string;
  /** The member who invited. */
  invited_by: number;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  accepted_by: number | null;
  /** Set when a newer invitation to the same address replaced it, or the team went away. */
  revoked_at: number | null;
}

export interface TeamTables {
  team_roles: TeamRolesTable;
  team_invites: TeamInvitesTable;
}
