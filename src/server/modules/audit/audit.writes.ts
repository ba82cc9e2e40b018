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
  /** Rows that came while a write was in flight: the next write takes them together. */
  readonly queued: QueuedAuditRow[] = [];
  writing = false;
}
