// What an instance is doing, in one word a person reads, from the two columns the API sends: what
// the client asked for (`intended_status`) and what the host reports (`actual_status`). Pure, so
// the console's card and its tests decide with the same function.

export type InstanceStateKey =
  | 'provisioning'
  | 'loading'
  | 'running'
  | 'stopping'
  | 'starting'
  | 'stopped'
  | 'exited'
  | 'failed'
  | 'unknown'
  | 'offline';

export interface StateInput {
  intended_status: string;
  actual_status?: string | null;
  /** Set once the instance first ran (its SSH port answered); null for one that never did. */
  ssh_port?: number | null;
}

/**
 * - asked to stop and still running, loading or not yet provisioned: `stopping`;
 * - asked to run and stopped: `starting` (its host starts it at its next sync);
 * - exited: it stopped by itself and stays so until the client starts it again (a start sets it
 *   back to provisioning), so it is never "starting": `failed` when it never ran (no SSH port was
 *   ever set: an image that cannot be pulled, an on-start that fails at once), `exited` otherwise;
 * - null: `provisioning`; every other status reads as itself.
 */
export function instanceState(i: StateInput): InstanceStateKey {
  const a = i.actual_status ?? null;
  if (i.intended_status === 'stopped' && (a === 'running' || a === 'loading' || a === null))
    return 'stopping';
  if (i.intended_status === 'running' && a === 'stopped') return 'starting';
  if (a === 'exited') return i.ssh_port ? 'exited' : 'failed';
  if (a === null) return 'provisioning';
  switch (a) {
    case 'loading':
    case 'running':
    case 'stopped':
    case 'unknown':
    case 'offline':
      return a;
    default:
      return 'unknown';
  }
}

/** States that change only when someone acts (or the host comes back): polled slowly. */
export function isSettled(k: InstanceStateKey): boolean {
  return k === 'running' || k === 'stopped' || k === 'exited' || k === 'failed' || k === 'offline';
}
