// What the agent does for one instance, given what it sees here and what the server wants.
// Pure, so every combination is tested (reconcile.test.ts).
import { assertNever } from '../contract/assert-never.js';
import type { DesiredState } from '../contract/agent-protocol.js';
import type { ObservedState } from './runtime.js';

export type LocalState = ObservedState['state'];
export type AgentAction =
  | 'start'
  | 'restart'
  | 'stop'
  | 'destroy'
  | 'update-keys'
  /** Replace what is here by a container of the new configuration, and run it. */
  | 'recreate'
  /** Replace what is here by a container of the new configuration, left stopped. */
  | 'recreate-stopped'
  /** Nothing of it is here although it was: report it `exited`, gone from the host. */
  | 'gone'
  | 'none';

/**
 * - destroyed: remove whatever is here.
 * - stopped: stop what runs (or died: that clears it), keep the files.
 * - running: start what is not running; keep the keys of what runs current. A dead instance
 *   (its main process died, or its start failed) never runs again by itself (docs/api.md, "Instances"): only when the server shows it null or stopped again — a client's start — is it
 *   restarted. Unknown and offline never run again either: kept if still running here, never
 *   restarted.
 * - absent here, to run: started only while it is provisioning (server null or loading) or on a
 *   client's start of a stopped instance. One the server shows running was here and vanished:
 *   `gone`. One the server shows unknown or offline is gone when this host had it (`held`), and
 *   started when it never had it (created just before the agent stopped). One the server shows
 *   exited already died: nothing.
 * - outdated (`stale`: what is here, or what last failed to start, is of an older configuration
 *   generation than the server's, after an update): recreated from the new configuration, even
 *   when the server has lost sight of the host meanwhile (the client asked for it; a report of
 *   the new container brings it back). What is absent here is simply started from it. A stopped
 *   instance is stopped first and then replaced, left stopped. `failed` then means the recreate
 *   of the current configuration failed here: it is not tried again by itself.
 */
export function decideAction(
  local: LocalState,
  failed: boolean,
  desired: DesiredState,
  serverActual: string | null,
  stale = false,
  held = false,
): AgentAction {
  switch (desired) {
    case 'destroyed':
      return local === 'absent' ? 'none' : 'destroy';
    case 'stopped':
      if (local === 'running' || local === 'starting' || local === 'exited') return 'stop';
      return stale && !failed && local === 'stopped' ? 'recreate-stopped' : 'none';
    case 'running': {
      const lost = serverActual === 'unknown' || serverActual === 'offline';
      if (stale) {
        // The recreate of this configuration already failed here (`failed`): like a failed start,
        // it is tried again only when a client's start shows the instance null or stopped again.
        if (failed && (lost || !(serverActual === null || serverActual === 'stopped'))) return 'none';
        return local !== 'absent' ? 'recreate' : lost ? 'none' : 'start';
      }
      if (local === 'exited' || failed) {
        return !lost && (serverActual === null || serverActual === 'stopped') ? 'restart' : 'none';
      }
      switch (local) {
        case 'absent':
          if (lost) return held ? 'gone' : 'start';
          if (serverActual === 'running') return 'gone';
          return serverActual === 'exited' ? 'none' : 'start';
        case 'stopped':
          return lost ? 'none' : 'start';
        case 'running':
        case 'starting':
          return 'update-keys';
        default:
          return assertNever(local, 'local state');
      }
    }
    default:
      return assertNever(desired, 'desired state');
  }
}

/** One instance as the agent sees it in a sync: what the server wants and what is here. */
export interface ReconcileItem {
  id: number;
  machineId: number;
  local: LocalState;
  /** Its last start failed (reported `exited`). */
  failed: boolean;
  /** An operation (start, stop, destroy) of it is still under way here. */
  busy: boolean;
  desired: DesiredState;
  serverActual: string | null;
  /** What is here (or last failed to start) is of an older configuration generation. */
  stale?: boolean;
  /** This host has had the instance (its agent saw it here, or started it). */
  held?: boolean;
}

/** `wait`: a start that must wait until the machine's other instance has stopped here. */
export type PlannedAction = Exclude<AgentAction, 'none'> | 'wait';

/**
 * The reconcile, per machine: one slot, one running container. A stop frees
 * the machine on the server at once, so another client's instance may be due to start on the
 * same GPUs while the stopped one still runs here. Hence:
 * - stops and destroys come first;
 * - a start (or restart) waits while another instance of the same machine is running, starting,
 *   or has an operation under way here (stopping counts), and at most one start per machine is
 *   begun per round; the agent syncs again when an operation ends, so the waiting start follows.
 * - An instance whose machine is not one of `machineIds` (the server no longer knows it) and
 *   that still runs here blocks every machine: which GPUs it holds is not known.
 * A recreate that runs the new container is a start (the machine may be another's until its stop
 * ends); one left stopped comes first, with the stops, and so does a `gone`. Busy instances get nothing (one operation
 * at a time per instance). Order of the result: stops/destroys, then key updates, then starts and
 * waits.
 */
export function planReconcile(
  items: ReconcileItem[],
  machineIds: readonly number[],
): { id: number; action: PlannedAction }[] {
  const known = new Set(machineIds);
  const decided = items.map((it) => ({
    it,
    action: it.busy
      ? 'none'
      : decideAction(it.local, it.failed, it.desired, it.serverActual, it.stale, it.held),
  }));
  // What occupies a machine's GPUs after this round's stops and destroys have begun.
  const occupies = ({ it, action }: (typeof decided)[number]) =>
    it.busy ||
    action === 'stop' ||
    action === 'destroy' ||
    action === 'update-keys' ||
    it.local === 'running' ||
    it.local === 'starting';
  const holders = decided.filter(occupies);
  // (A holder is never itself about to start: a start needs it absent, stopped or exited here.)
  const everywhere = holders.some((d) => !known.has(d.it.machineId));
  const taken = new Map<number, number>(); // machine → an instance that holds it (or starts on it now)
  for (const d of holders) if (!taken.has(d.it.machineId)) taken.set(d.it.machineId, d.it.id);
  const first: { id: number; action: PlannedAction }[] = [];
  const keys: { id: number; action: PlannedAction }[] = [];
  const starts: { id: number; action: PlannedAction }[] = [];
  for (const { it, action } of [...decided].sort((a, b) => a.it.id - b.it.id)) {
    switch (action) {
      case 'none':
        break;
      case 'stop':
      case 'destroy':
      case 'gone': // nothing here: it takes no GPU
      case 'recreate-stopped': // replaced without running: it takes no GPU
        first.push({ id: it.id, action });
        break;
      case 'update-keys':
        keys.push({ id: it.id, action });
        break;
      case 'start':
      case 'restart':
      case 'recreate': {
        const holder = taken.get(it.machineId);
        if ((holder !== undefined && holder !== it.id) || everywhere) {
          starts.push({ id: it.id, action: 'wait' });
        } else {
          taken.set(it.machineId, it.id);
          starts.push({ id: it.id, action });
        }
        break;
      }
      default:
        assertNever(action, 'agent action');
    }
  }
  return [...first, ...keys, ...starts];
}
