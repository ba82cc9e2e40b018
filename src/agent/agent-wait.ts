// The agent's long poll (docs/agent.md, "Woken at once"): beside the sync loop, the agent holds
// one POST wait at all times against a server whose registration said `long_polls`. The server
// answers it as soon as something is queued for the agent's machines (a client's logs, command,
// reboot or recycle; a change of what a machine should run), and the agent syncs at once instead
// of at its next heartbeat; a wait that runs out is simply made again. After a wake the next wait
// starts once that sync is done, so the request it carries is no longer new to the server (which
// answers a wait at once while a pending request newer than `after_request_id` exists).
// Failures back off (up to half a minute) and never stop the sync loop: the heartbeat still
// carries everything, a few seconds later.
import { AgentFatalError, AgentHttpError, type AgentClient } from './agent-client.js';
import type { AgentLog } from './agent-log.js';

/** How long the agent asks the server to hold a wait (the server may hold less). */
export const WAIT_S = 25;

const MAX_BACKOFF_MS = 30_000;

export interface WaitHost {
  readonly client: AgentClient;
  readonly uid: string;
  readonly log: AgentLog;
  machineIds(): number[];
  /** The highest request id the server has handed this agent. */
  lastRequestId(): number;
  /** Asks the sync loop for a sync now; resolves once one that began after the call is done. */
  syncNow(): Promise<void>;
}

export class WaitLoop {
  private stopped = false;
  private readonly abort = new AbortController();
  private running: Promise<void> | null = null;

  constructor(private readonly host: WaitHost) {}

  get active(): boolean {
    return this.running !== null && !this.stopped;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Ends the held wait now and the loop with it. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.running;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.abort.signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  private async run(): Promise<void> {
    const h = this.host;
    let failures = 0;
    while (!this.stopped) {
      const machineIds = h.machineIds();
      if (machineIds.length === 0) {
        await this.pause(1000);
        continue;
      }
      try {
        const r = await h.client.wait(
          {
            agent_uid: h.uid,
            machine_ids: machineIds,
            after_request_id: h.lastRequestId(),
            timeout_s: WAIT_S,
          },
          this.abort.signal,
        );
        failures = 0;
        if (r.wake) await h.syncNow();
      } catch (err) {
        if (this.stopped) break;
        // A refused key ends the agent through its sync loop; a server that no longer serves
        // waits (replaced by an older one) leaves the agent to its heartbeat until it registers
        // again with one that does.
        if (err instanceof AgentFatalError || (err instanceof AgentHttpError && err.status === 404)) {
          h.log.warn(
            `waiting for the server's wake-ups stopped (${(err as Error).message}); syncing every heartbeat`,
          );
          break;
        }
        failures++;
        if (failures === 1)
          h.log.warn(`waiting for the server's wake-ups failed, retrying: ${(err as Error).message}`);
        await this.pause(Math.min(500 * 2 ** failures, MAX_BACKOFF_MS));
      }
    }
    this.stopped = true;
  }
}
