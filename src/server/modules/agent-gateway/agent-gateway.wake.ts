// Waking agents: a client's request of an instance (logs, command, reboot, recycle) or a change of
// what a machine should run reaches its agent at once, not at its next heartbeat. The agent holds
// a wait (POST wait, agent-gateway.wait.ts); this process keeps the held waits in memory by
// machine id, with nothing running per wait but its timer. notify() wakes the waits of those
// machines in this process and, through the relay, in every other process serving the database:
// - PostgreSQL: NOTIFY on a channel every process LISTENs on (one connection each, opened on the
//   first wait), which reaches the processes of a cluster and separate `serve` processes alike;
// - SQLite in a cluster: the worker's IPC to the primary, which passes it to the other workers;
// - one process: nothing else to tell.
// A wake that is lost (a relay down, a wait not held at that moment) costs at most one heartbeat:
// the agent's regular sync carries the request all the same.
import type { Notifications } from '../../db/notify.js';

/** Something that carries machine ids to the other processes and hears theirs. */
export interface WakeRelay {
  send(ids: number[]): Promise<void> | void;
  /** Starts hearing the others' wakes; resolves once it does. Absent: it hears them already. */
  listen?(onWake: (ids: number[]) => void): Promise<void>;
  close?(): Promise<void>;
}

/** The topic of agent wakes in the database's notifications. */
const TOPIC = 'agent_wake';

/** A payload holds at most this many ids (PostgreSQL takes 8,000 bytes). */
const IDS_PER_PAYLOAD = 500;

/** The database's notifications as a relay (PostgreSQL). */
export function notificationsRelay(n: Notifications): WakeRelay {
  return {
    async send(ids) {
      for (let i = 0; i < ids.length; i += IDS_PER_PAYLOAD)
        await n.notify(TOPIC, ids.slice(i, i + IDS_PER_PAYLOAD).join(','));
    },
    listen: (onWake) =>
      n.listen(TOPIC, (payload) =>
        onWake(
          payload
            .split(',')
            .map(Number)
            .filter((x) => Number.isSafeInteger(x) && x > 0),
        ),
      ),
    close: () => n.close(),
  };
}

export interface HeldWait {
  /** True when woken; false at the timeout, or when the process stops taking waits. */
  readonly woken: Promise<boolean>;
  /** Ends the wait now (its caller went away), answering false. */
  cancel(): void;
}

export class AgentWake {
  /** The held waits by machine id: each wait's resolver, under each of its machines. */
  private readonly waits = new Map<number, Set<(woken: boolean) => void>>();
  private relay: WakeRelay | null = null;
  private hearing: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly onError: (err: unknown) => void = () => {}) {}

  /** The relay to the other processes (main.ts sets it once the store is open). */
  useRelay(relay: WakeRelay): void {
    this.relay = relay;
  }

  /** Waits held in this process now. */
  get held(): number {
    let n = 0;
    for (const s of this.waits.values()) n += s.size;
    return n;
  }

  /**
   * Resolves once the other processes' wakes reach this one (the relay listens, opened on the
   * first call). A wait checks the database only after this, so that a request queued after the
   * check is sure to wake it; when the relay cannot listen, it rejects and the wait still serves
   * this process's wakes.
   */
  hear(): Promise<void> {
    const listen = this.relay?.listen;
    if (!listen) return Promise.resolve();
    this.hearing ??= listen((ids) => this.wakeLocal(ids)).catch((err: unknown) => {
      this.hearing = null;
      throw err;
    });
    return this.hearing;
  }

  /** A wait for any of `machineIds`, ended by a wake of one of them or after `timeoutMs`. */
  wait(machineIds: number[], timeoutMs: number): HeldWait {
    let finish!: (woken: boolean) => void;
    const woken = new Promise<boolean>((resolve) => {
      let done = false;
      finish = (w: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        for (const id of machineIds) {
          const s = this.waits.get(id);
          s?.delete(finish);
          if (s?.size === 0) this.waits.delete(id);
        }
        resolve(w);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
    });
    if (this.closed) finish(false);
    else
      for (const id of machineIds) {
        let s = this.waits.get(id);
        if (!s) this.waits.set(id, (s = new Set()));
        s.add(finish);
      }
    return { woken, cancel: () => finish(false) };
  }

  /** Wakes the waits of these machines held in this process. */
  wakeLocal(machineIds: Iterable<number>): void {
    for (const id of machineIds) for (const finish of [...(this.waits.get(id) ?? [])]) finish(true);
  }

  /**
   * Something was queued for these machines (called after its transaction committed): wakes
   * their agents' waits here and in the other processes. Never throws: a relay that fails is
   * reported, and the agents learn it at their next heartbeat.
   */
  notify(machineIds: number[]): void {
    const ids = [...new Set(machineIds)];
    if (ids.length === 0) return;
    this.wakeLocal(ids);
    try {
      const sent = this.relay?.send(ids);
      if (sent) sent.catch(this.onError);
    } catch (err) {
      this.onError(err);
    }
  }

  /** Ends every wait (false) and takes no more; closes the relay. */
  async close(): Promise<void> {
    this.closed = true;
    for (const s of [...this.waits.values()]) for (const finish of [...s]) finish(false);
    await this.relay?.close?.();
  }
}
