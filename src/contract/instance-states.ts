// The instance state machine (docs/api.md, "Instances"). Pure: the server's instance service,
// the billing meter and the agent gateway all decide with it.
//
// Two columns describe an instance:
// - `actual_status`: what is running. `null` (being provisioned), `loading` (image downloading),
//   `running` (ready), `exited` (container crashed), `unknown` (no heartbeat from the host),
//   `offline` (host disconnected), and `stopped` (halted on the client's request).
// - `intended_status`: what the client asked for: `running` or `stopped`.
// Destroying is not a status: it sets `destroyed_at` and the instance is gone from every listing.
//
// Rules encoded here:
// - null → loading → running, driven by the agent's reports;
// - exited never reaches running by itself (the client destroys, or explicitly starts it again:
//   that sets it back to null, provisioning);
// - unknown and offline are the server losing sight of the host, not the instance dying: when
//   its agent comes back and reports the instance still running (the same container or process,
//   never a new start: the agent starts nothing the server shows unknown or offline), it is
//   running again; one whose container is gone is reported exited;
// - PUT {state: "stopped"} halts compute billing at once; {state: "running"} resumes it;
// - DELETE destroys from any state;
// - repeating an action that already holds is harmless (a no-op success).
import { assertNever } from './assert-never.js';

export const ACTUAL_STATUSES = [
  null,
  'loading',
  'running',
  'exited',
  'unknown',
  'offline',
  'stopped',
] as const;
export type ActualStatus = (typeof ACTUAL_STATUSES)[number];
export const INTENDED_STATUSES = ['running', 'stopped'] as const;
export type IntendedStatus = (typeof INTENDED_STATUSES)[number];

/** What a client may do to one instance (the row's `allowed_actions`). */
export const CLIENT_ACTIONS = ['start', 'stop', 'destroy', 'label', 'ssh_attach'] as const;
export type ClientAction = (typeof CLIENT_ACTIONS)[number];

/** Statuses an agent may report for an instance it runs. */
export const REPORTED_STATUSES = ['loading', 'running', 'exited', 'stopped'] as const;
export type ReportedStatus = (typeof REPORTED_STATUSES)[number];

/** Statuses the server's heartbeat sweeps set when a host goes quiet (thresholds in .env.example). */
export const SWEEP_STATUSES = ['unknown', 'offline'] as const;
export type SweepStatus = (typeof SWEEP_STATUSES)[number];

export interface InstanceState {
  actual: ActualStatus;
  intended: IntendedStatus;
}

export function isActualStatus(x: unknown): x is ActualStatus {
  return (ACTUAL_STATUSES as readonly unknown[]).includes(x);
}

export function isIntendedStatus(x: unknown): x is IntendedStatus {
  return x === 'running' || x === 'stopped';
}

/** How a state is named in messages: `null` reads as "null (provisioning)". */
export function stateName(s: ActualStatus): string {
  return s === null ? 'null (provisioning)' : s;
}

/**
 * Compute is billed only while the container runs and the client wants it running. Stopping
 * flips both columns in one update, so billing halts at the moment of the request.
 */
export function isComputeBilled(s: InstanceState): boolean {
  return s.actual === 'running' && s.intended === 'running';
}

/** Which client actions make sense in a state. Destroy and label are always possible. */
export function allowedActions(s: InstanceState): ClientAction[] {
  const out: ClientAction[] = [];
  if (canStart(s)) out.push('start');
  if (canStop(s)) out.push('stop');
  out.push('destroy', 'label', 'ssh_attach');
  return out;
}

function canStart(s: InstanceState): boolean {
  const a = s.actual;
  switch (a) {
    case 'stopped':
    case 'exited': // a restart request: the agent starts the container again
      return true;
    case null:
    case 'loading':
    case 'running':
    case 'unknown':
    case 'offline':
      return false;
    default:
      return assertNever(a, 'actual_status');
  }
}

function canStop(s: InstanceState): boolean {
  const a = s.actual;
  switch (a) {
    case null:
    case 'loading':
    case 'running':
      return s.intended === 'running';
    case 'stopped':
    case 'exited':
    case 'unknown':
    case 'offline':
      return false;
    default:
      return assertNever(a, 'actual_status');
  }
}

export type ClientDecision =
  /** Change the row: set these statuses (conditional on the state the decision was made in). */
  | { kind: 'apply'; next: InstanceState }
  /** Already so: answer success and change nothing (repeats are harmless). */
  | { kind: 'noop' }
  /** Makes no sense here: a 4xx whose message names the state. */
  | { kind: 'refuse'; msg: string };

/** Decides a client's start / stop request (PUT {state}) in the current state. */
export function decideStateRequest(s: InstanceState, want: IntendedStatus): ClientDecision {
  if (want === 'stopped') {
    if (s.intended === 'stopped') return { kind: 'noop' };
    if (canStop(s)) return { kind: 'apply', next: { actual: 'stopped', intended: 'stopped' } };
    return {
      kind: 'refuse',
      msg: `Cannot stop an instance in state ${stateName(s.actual)}; destroy it instead`,
    };
  }
  if (want === 'running') {
    // Already running, or on its way there: nothing to do.
    if (s.intended === 'running' && (s.actual === null || s.actual === 'loading' || s.actual === 'running'))
      return { kind: 'noop' };
    if (canStart(s)) {
      // The agent sees intended=running and brings it back up: loading, then running. A stopped
      // instance keeps `stopped` until the agent reports (compute is not billed meanwhile). An
      // exited one goes back to null (provisioning): visibly a new start, and the signal the
      // agent restarts on (it never restarts an instance the server still shows exited, which
      // never reaches running by itself).
      return {
        kind: 'apply',
        next: { actual: s.actual === 'exited' ? null : s.actual, intended: 'running' },
      };
    }
    return {
      kind: 'refuse',
      msg: `Cannot start an instance in state ${stateName(s.actual)}; it never reaches running by itself: destroy it and rent another offer`,
    };
  }
  return assertNever(want, 'state');
}

/**
 * Decides a client's update of an instance's configuration (`update instance`), which its agent
 * carries out by recreating the container:
 * - one the client wants running (null, loading, running, exited, or a start not yet reported)
 *   goes to `loading` until the agent reports the new container running: the update is also a
 *   way out of `exited` (a fixed image or onstart), as a start is;
 * - a stopped one stays stopped: the agent replaces the container without starting it, and the
 *   new configuration runs at the next start;
 * - unknown and offline are refused: the host is out of reach, so nothing could carry it out and
 *   the client would read a `loading` that nothing moves.
 */
export function decideUpdate(s: InstanceState): ClientDecision {
  const a = s.actual;
  switch (a) {
    case 'unknown':
    case 'offline':
      return {
        kind: 'refuse',
        msg: `Cannot update an instance in state ${a}: its host is out of reach, so nothing can recreate it; update it once the host is back, or destroy it`,
      };
    case null:
    case 'loading':
    case 'running':
    case 'exited':
    case 'stopped':
      if (s.intended === 'stopped') return { kind: 'apply', next: s };
      return { kind: 'apply', next: { actual: 'loading', intended: 'running' } };
    default:
      return assertNever(a, 'actual_status');
  }
}

export type AgentDecision =
  | { kind: 'apply'; next: ActualStatus }
  | { kind: 'noop' }
  /** A report that contradicts the machine: ignored, with the reason for the agent's log. */
  | { kind: 'reject'; reason: string };

/**
 * Decides what an agent's report does to an instance. The agent gateway calls this, then writes
 * the result with a conditional update on the status it read (instances.moves setActualStatus).
 */
export function applyAgentReport(s: InstanceState, reported: ReportedStatus): AgentDecision {
  const a = s.actual;
  if (a === reported) return { kind: 'noop' };
  switch (reported) {
    case 'loading':
      // Provisioning proceeds (also a restart of an exited instance: the client's start set it back
      // to null); or a restart the client asked for after a stop. Exited stays exited until then.
      if (s.intended !== 'running') return reject(s, reported, 'the client asked for it to be stopped');
      if (a === null || a === 'stopped') return { kind: 'apply', next: 'loading' };
      return reject(s, reported);
    case 'running':
      if (s.intended !== 'running') return reject(s, reported, 'the client asked for it to be stopped');
      // Boot completes (null → running when the image was already present), or the host came
      // back and its agent re-adopted the instance that kept running meanwhile.
      if (a === null || a === 'loading' || a === 'unknown' || a === 'offline')
        return { kind: 'apply', next: 'running' };
      return reject(s, reported, a === 'exited' ? 'exited never reaches running by itself' : undefined);
    case 'exited':
      // The container crashed (or never started, or was gone when the host came back). A stopped
      // instance has no container to crash.
      if (a === null || a === 'loading' || a === 'running' || a === 'unknown' || a === 'offline')
        return { kind: 'apply', next: 'exited' };
      return reject(s, reported);
    case 'stopped':
      // The agent confirms it halted the container; only when the client asked for that.
      if (s.intended === 'stopped') return { kind: 'apply', next: 'stopped' };
      return reject(s, reported, 'the client did not ask for a stop');
    default:
      return assertNever(reported, 'reported status');
  }
}

function reject(s: InstanceState, reported: ReportedStatus, why?: string): AgentDecision {
  return {
    kind: 'reject',
    reason: `cannot go from ${stateName(s.actual)} to ${reported}${why ? `: ${why}` : ''}`,
  };
}

/**
 * Decides a heartbeat sweep: no heartbeat for OPENRIG_UNKNOWN_AFTER_S makes live instances
 * `unknown`; for OPENRIG_OFFLINE_AFTER_S makes every instance of the machine `offline`.
 */
export function applySweep(s: InstanceState, to: SweepStatus): AgentDecision {
  const a = s.actual;
  if (a === to) return { kind: 'noop' };
  if (to === 'unknown') {
    if (a === null || a === 'loading' || a === 'running') return { kind: 'apply', next: 'unknown' };
    return { kind: 'noop' };
  }
  if (to === 'offline') {
    // A stopped instance also loses its host: it can no longer be started.
    return { kind: 'apply', next: 'offline' };
  }
  return assertNever(to, 'sweep status');
}
