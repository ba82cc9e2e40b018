// What the agent does for one instance, given what it sees here and what the server wants (issue
// 4, point 1). Pure, so every combination is tested (reconcile.test.ts).
import { assertNever } from '../server/errors.js';
import type { DesiredState } from '../contract/agent-protocol.js';
import type { ObservedState } from './runtime.js';

export type LocalState = ObservedState['state'];
export type AgentAction = 'start' | 'restart' | 'stop' | 'destroy' | 'update-keys' | 'none';

/**
 * - destroyed: remove whatever is here.
 * - stopped: stop what runs (or died: that clears it), keep the files.
 * - running: start what is not running; keep the keys of what runs current. A dead instance
 *   (its main process died, or its start failed) never runs again by itself (api-spec "States and
 *   transitions"): only when the server shows it null or stopped again — a client's start — is it
 *   restarted. Unknown and offline never run again either: kept if still running here, never
 *   started.
 */
export function decideAction(local: LocalState, failed: boolean, desired: DesiredState, serverActual: string | null): AgentAction {
  switch (desired) {
    case 'destroyed':
      return local === 'absent' ? 'none' : 'destroy';
    case 'stopped':
      return local === 'running' || local === 'starting' || local === 'exited' ? 'stop' : 'none';
    case 'running': {
      const lost = serverActual === 'unknown' || serverActual === 'offline';
      if (local === 'exited' || failed) {
        return !lost && (serverActual === null || serverActual === 'stopped') ? 'restart' : 'none';
      }
      switch (local) {
        case 'absent':
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
