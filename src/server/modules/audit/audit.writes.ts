// Audit rows being written after their replies (audit.hooks.ts): the app's close waits for them,
// so a graceful shutdown loses none. A field of Deps, one per process.
export class AuditWrites {
  readonly pending = new Set<Promise<void>>();
}
