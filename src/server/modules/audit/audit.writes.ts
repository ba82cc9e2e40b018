// Audit rows being written after their replies (audit.hooks.ts): the app's close waits for them,
// so a graceful shutdown loses none. A field of Deps, one per process.
import type { Insertable } from 'kysely';
import type { AuditLogsTable } from '../../db/tables/audit.js';

/** A row waiting for its write, with the settling of its request's promise. */
export interface QueuedAuditRow {
  row: Insertable<AuditLogsTable>;
  written: () => void;
  failed: (err: unknown) => void;
}

export class AuditWrites {
  readonly pending = new Set<Promise<void>>();
  /** Rows waiting for the next write, which takes them together. */
  readonly queued: QueuedAuditRow[] = [];
  /** The next write, while rows wait for others to join them. */
  timer: NodeJS.Timeout | null = null;
  writing = false;
}
