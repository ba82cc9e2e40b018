// Table types of the audit module (migration 022): the audit log, the addresses that used each
// account, and the turns of periodic jobs. Times are epoch ms.
import type { Generated } from 'kysely';

/** How the request or sign-in of an audit row was authenticated. */
export type AuditCredential =
  'api_key' | 'instance_key' | 'session_key' | 'browser_session' | 'password' | 'login_secret';

/** One state-changing request of a user, or one sign-in attempt on an existing account. */
export interface AuditLogsTable {
  id: Generated<number>;
  user_id: number;
  created_at: number;
  /** The client address as the app sees it (req.ip; a trusted proxy's X-Forwarded-For). */
  ip: string | null;
  /** The API key (or instance key) presented; null for sessions and sign-ins. */
  api_key_id: number | null;
  /** For a team's row: the member who acted for the team (user_id is the team's account). */
  member_id: number | null;
  credential: AuditCredential;
  method: string;
  /** The route's pattern with its parameters in braces: `/api/v0/instances/{id}/`. */
  route: string;
  /** The HTTP status of the reply. */
  status: number;
  /** JSON: `{path?, query?, body?}`: path parameters, query (credentials redacted), body field names. */
  args: string;
}

/** An address that used an account: one row per (user_id, ip), unique. */
export interface UserIpaddrsTable {
  id: Generated<number>;
  user_id: number;
  ip: string;
  first_seen: number;
  last_seen: number;
}

/** The next time a periodic job may run, claimed by one process at a time (jobs/turns.ts). */
export interface JobTurnsTable {
  name: string;
  next_at: number;
}

export interface AuditTables {
  audit_logs: AuditLogsTable;
  user_ipaddrs: UserIpaddrsTable;
  job_turns: JobTurnsTable;
}
