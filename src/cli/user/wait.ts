// Waiting for an instance to run (or to stop). Polls quickly at first, 0.5 s, then 1.5 times
// longer each time up to the interval (5 s by default): an instance ready in under a second is
// reported at once, a slow boot costs a poll every few seconds. `null` and `loading` keep waiting;
// `running` with an SSH endpoint is done; `exited`, `unknown` and `offline` never reach `running`
// (the client destroys it and retries another offer), so the wait stops there. Pure over its
// io (client, clock, sleep) so tests drive it with a fake client and a fake clock.
import type { Instance } from '../../contract/api-types.js';
import { ApiError, NetworkError } from '../../client/client.js';
import { fmtDuration } from '../output.js';
import { assertNever } from '../../contract/assert-never.js';

/** The longest pause between two polls, in seconds (the backoff's ceiling). */
export const DEFAULT_INTERVAL_S = 5;
/** The first pause between polls. */
export const FIRST_INTERVAL_MS = 500;
export const BACKOFF = 1.5;

/** The pause before poll n+1 (n from 0): 0.5 s, 0.75 s, 1.125 s … up to `maxMs`. */
export function pauseMs(n: number, maxMs: number): number {
  return Math.min(maxMs, Math.round(FIRST_INTERVAL_MS * BACKOFF ** n));
}
/** Consecutive network failures tolerated while waiting (a server restart is not a failure). */
export const MAX_NETWORK_FAILURES = 3;

export interface WaitIo {
  getInstance(id: number): Promise<Instance | null>;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Told after every poll: the state and how long the wait has run. */
  onPoll?(p: { state: string; elapsedMs: number; instance: Instance | null }): void;
}

export interface WaitOptions {
  /** The longest pause between polls. */
  intervalMs: number;
  /** Give up after this long (0: never). */
  timeoutMs: number;
  /** What to wait for: running with SSH (default), or stopped. */
  until?: 'running' | 'stopped';
}

export type WaitOutcome =
  | { kind: 'running'; instance: Instance; elapsedMs: number }
  | { kind: 'failed'; state: string; instance: Instance; elapsedMs: number }
  | { kind: 'gone'; elapsedMs: number }
  | { kind: 'stopped'; instance: Instance; elapsedMs: number }
  | { kind: 'halted'; instance: Instance; elapsedMs: number }
  | { kind: 'timeout'; state: string; elapsedMs: number };

export const NEVER_RUNS = new Set(['exited', 'unknown', 'offline']);

/** The state as a person reads it: `null` is "provisioning". */
export function stateLabel(i: Instance | null): string {
  if (!i) return 'gone';
  return i.actual_status ?? 'provisioning';
}

export async function waitForInstance(id: number, s: WaitIo, o: WaitOptions): Promise<WaitOutcome> {
  const start = s.now();
  const until = o.until ?? 'running';
  let netFailures = 0;
  let lastState = 'provisioning';
  let polls = 0;
  const pause = () => s.sleep(pauseMs(polls++, o.intervalMs));
  for (;;) {
    let inst: Instance | null;
    try {
      inst = await s.getInstance(id);
      netFailures = 0;
    } catch (err) {
      // A blip (server restarting, 5xx) is retried a few times; any 4xx is final.
      const transient = err instanceof NetworkError || (err instanceof ApiError && err.status >= 500);
      if (!transient || ++netFailures > MAX_NETWORK_FAILURES) throw err;
      s.onPoll?.({
        state: `${lastState} (server not answering, retrying)`,
        elapsedMs: s.now() - start,
        instance: null,
      });
      await pause();
      continue;
    }
    const elapsedMs = s.now() - start;
    const state = stateLabel(inst);
    lastState = state;
    s.onPoll?.({ state, elapsedMs, instance: inst });
    if (!inst) return { kind: 'gone', elapsedMs };
    if (until === 'stopped') {
      if (inst.actual_status === 'stopped' || inst.actual_status === 'exited')
        return { kind: 'halted', instance: inst, elapsedMs };
    } else {
      if (inst.actual_status === 'running' && inst.ssh_host && inst.ssh_port)
        return { kind: 'running', instance: inst, elapsedMs };
      if (inst.actual_status !== null && NEVER_RUNS.has(inst.actual_status))
        return { kind: 'failed', state: inst.actual_status, instance: inst, elapsedMs };
      // Stopped on purpose: waiting would never end. A stopped instance that was just started
      // (intended running) is on its way and is waited for.
      if (
        inst.intended_status === 'stopped' ||
        (inst.actual_status === 'stopped' && inst.intended_status === undefined)
      ) {
        return { kind: 'stopped', instance: inst, elapsedMs };
      }
    }
    const next = pauseMs(polls, o.intervalMs);
    if (o.timeoutMs > 0 && elapsedMs + next > o.timeoutMs) return { kind: 'timeout', state, elapsedMs };
    await pause();
  }
}

/**
 * `ssh [-i KEY] -p PORT root@HOST`: renters connect as root to the instance's ssh_host and
 * ssh_port; `identity` is given when the registered key is not one ssh tries by itself.
 */
export function sshCommand(i: Instance, identity?: string): string {
  return `ssh ${identity ? `-i ${identity} ` : ''}-p ${i.ssh_port} root@${i.ssh_host}`;
}

export function scpUrl(i: Instance): string {
  return `scp://root@${i.ssh_host}:${i.ssh_port}`;
}

export function sshUrl(i: Instance): string {
  return `ssh://root@${i.ssh_host}:${i.ssh_port}`;
}

/** The line the CLI prints for an outcome, and whether it is a success. */
export function describeOutcome(
  id: number,
  r: WaitOutcome,
  identity?: string,
  /** The wait follows this reboot or recycle. */
  restart?: 'reboot' | 'recycle',
): { ok: boolean; text: string } {
  const took = fmtDuration(r.elapsedMs / 1000);
  switch (r.kind) {
    case 'running': {
      const what = restart
        ? `${restart === 'reboot' ? 'rebooted' : 'recycled'} and running again`
        : 'running';
      return {
        ok: true,
        text: `instance ${id} is ${what} (after ${took}). Connect with:\n  ${sshCommand(r.instance, identity)}\n  (or: openrig ssh ${id})\n`,
      };
    }
    case 'failed': {
      const why = r.instance.status_msg ? `: ${r.instance.status_msg}` : '';
      // A restart that left no container running: a client's start brings it back.
      if (restart && r.state === 'exited') {
        const reason = String(r.instance.status_msg ?? '').replace(new RegExp(`^${restart} failed: `), '');
        return {
          ok: false,
          text: `instance ${id}: the ${restart} failed${reason ? `: ${reason}` : ''}; the instance is exited now. Start it again (openrig start instance ${id}) or destroy it (openrig destroy instance ${id}).`,
        };
      }
      return {
        ok: false,
        text: `instance ${id} is ${r.state}${why}. An instance in this state never reaches running; destroy it (openrig destroy instance ${id}) and try another offer.`,
      };
    }
    case 'gone':
      return { ok: false, text: `instance ${id} does not exist (destroyed, or not yours)` };
    case 'stopped':
      return { ok: false, text: `instance ${id} is stopped; start it with: openrig start instance ${id}` };
    case 'halted':
      return { ok: true, text: `instance ${id} is ${stateLabel(r.instance)} (after ${took})\n` };
    case 'timeout':
      return {
        ok: false,
        text: `instance ${id} is still ${r.state} after ${took}; gave up waiting (raise --timeout, or check: openrig show instance ${id})`,
      };
    default:
      return assertNever(r, 'wait outcome');
  }
}
