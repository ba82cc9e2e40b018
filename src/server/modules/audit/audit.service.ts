// The audit log and the login addresses (docs/security.md, "The audit log"):
// - recordAudit writes one row after a reply (audit.hooks.ts decides which requests get one);
// - listAuditLogs and listIpAddrs read the caller's own rows, newest first;
// - pruneAudit deletes what is older than OPENRIG_AUDIT_RETENTION_DAYS (jobs/audit-retention.ts).
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import type { AuditCredential } from '../../db/tables/audit.js';
import { nextTurn } from '../../clock.js';
import type { AuditArgs } from './audit.args.js';
import { recordAddressUse } from './audit.addresses.js';
import * as repo from './audit.repo.js';

/** The most rows one listing returns (and the default of `limit`). */
export const AUDIT_LIST_MAX = 1000;
/** The most addresses GET /users/me/ipaddrs returns: the most recently seen. */
export const IPADDRS_MAX = 1000;
/** Rows per delete statement of the retention job. */
const PRUNE_CHUNK = 5000;

export interface AuditEntry {
  userId: number;
  at: number;
  ip: string | null;
  apiKeyId: number | null;
  /** For a team's row: the member who acted for the team. */
  memberId?: number | null;
  credential: AuditCredential;
  method: string;
  route: string;
  status: number;
  args: AuditArgs;
  /** The address used the account (an authenticated request, a completed sign-in). */
  usedAccount: boolean;
}

/** Rows per insert statement. */
const WRITE_BATCH = 500;
/** How long a row waits for others to share its statement (and its commit). */
export const AUDIT_BATCH_MS = 100;

/**
 * Writes one audit row, and queues the address as one that used the account when it did. The row
 * waits up to AUDIT_BATCH_MS for the others that come meanwhile (and for a write in flight), and
 * they go together in one statement: a burst of writes costs a few commits, not one each, which
 * on SQLite (every commit an fsync, one writer) would otherwise slow the requests themselves.
 * Resolves once the row is stored; rejects when it could not be.
 */
export function recordAudit(
  deps: Pick<Deps, 'db' | 'log' | 'addressUses' | 'auditWrites'>,
  e: AuditEntry,
): Promise<void> {
  if (e.usedAccount) recordAddressUse(deps, e.userId, e.ip, e.at);
  const row = {
    user_id: e.userId,
    created_at: e.at,
    ip: e.ip,
    api_key_id: e.apiKeyId,
    member_id: e.memberId ?? null,
    credential: e.credential,
    method: e.method,
    route: e.route,
    status: e.status,
    args: JSON.stringify(e.args),
  };
  return new Promise<void>((written, failed) => {
    const w = deps.auditWrites;
    w.queued.push({ row, written, failed });
    if (w.writing || w.timer) return;
    w.timer = setTimeout(() => {
      w.timer = null;
      void writeQueued(deps);
    }, AUDIT_BATCH_MS);
  });
}

/** Writes the queued rows until none is left; a batch that fails is retried row by row. */
async function writeQueued(deps: Pick<Deps, 'db' | 'auditWrites'>): Promise<void> {
  const w = deps.auditWrites;
  w.writing = true;
  try {
    while (w.queued.length > 0) {
      const batch = w.queued.splice(0, WRITE_BATCH);
      try {
        await repo.insertAuditRows(
          deps.db,
          batch.map((q) => q.row),
        );
        for (const q of batch) q.written();
      } catch (err) {
        if (batch.length === 1) batch[0]!.failed(err);
        // One row's failure must not cost the others theirs.
        else for (const q of batch) await repo.insertAuditRows(deps.db, [q.row]).then(q.written, q.failed);
      }
    }
  } finally {
    w.writing = false;
  }
}

export function auditRowView(r: repo.AuditRow) {
  return {
    id: r.id,
    created_at: r.created_at / 1000,
    ip_address: r.ip,
    api_key_id: r.api_key_id,
    member_id: r.member_id,
    credential: r.credential,
    api_route: `${r.method} ${r.route}`,
    status: r.status,
    args: JSON.parse(r.args) as AuditArgs,
  };
}

export async function listAuditLogs(
  deps: Pick<Deps, 'db'>,
  auth: AuthContext,
  limit: number = AUDIT_LIST_MAX,
): Promise<ReturnType<typeof auditRowView>[]> {
  return (await repo.listAuditRows(deps.db, auth.user.id, limit)).map(auditRowView);
}

export async function listIpAddrs(deps: Pick<Deps, 'db'>, auth: AuthContext) {
  const rows = await repo.listAddresses(deps.db, auth.user.id, IPADDRS_MAX);
  return rows.map((r) => ({
    ip: r.ip,
    first_seen: r.first_seen / 1000,
    last_seen: r.last_seen / 1000,
    // openrig has no geo-IP database.
    first_location: null,
  }));
}

export interface PruneResult {
  auditRows: number;
  addresses: number;
}

/**
 * Deletes audit rows older than the retention period and addresses not seen within it, a chunk
 * per statement with a turn of the event loop between chunks.
 */
export async function pruneAudit(deps: Pick<Deps, 'db' | 'clock' | 'config'>): Promise<PruneResult> {
  const before = deps.clock.now() - deps.config.audit.retentionDays * 86_400_000;
  const out: PruneResult = { auditRows: 0, addresses: 0 };
  for (;;) {
    const n = await repo.deleteAuditRowsBefore(deps.db, before, PRUNE_CHUNK);
    out.auditRows += n;
    if (n < PRUNE_CHUNK) break;
    await nextTurn();
  }
  for (;;) {
    const n = await repo.deleteAddressesBefore(deps.db, before, PRUNE_CHUNK);
    out.addresses += n;
    if (n < PRUNE_CHUNK) break;
    await nextTurn();
  }
  return out;
}
