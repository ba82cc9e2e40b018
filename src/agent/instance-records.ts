// What the agent process knows of each instance beyond what its runtime shows: one record per
// instance id, made on the first fact and dropped once it holds none. Held in memory only; what
// must outlive a restart is in the state directory (state-dir.ts).

export type Op = 'start' | 'stop' | 'destroy' | 'reboot' | 'recycle' | 'recreate';

/** An operation under way on an instance (one at a time). */
export interface OpRecord {
  op: Op;
  /** Settles when the operation has ended, whatever its outcome. */
  done: Promise<void>;
  /** The configuration generation a start, recycle or recreate makes. */
  generation?: number;
  /** Whether a recreate runs the new container (else it leaves it stopped). */
  start?: boolean;
}

export interface InstanceRecord {
  /** The operation under way. */
  op?: OpRecord;
  /** The configuration generation this agent last began to start or create. */
  generation?: number;
  /** Started, and the server has not yet heard it `loading`. */
  announceLoading: boolean;
  /** What a start or restart under way is doing (pulling, creating): the `loading` status_msg. */
  progress?: string;
  /** Why the last start failed: reported `exited` until the server wants something else. */
  failure?: string;
  /** A start that waits for its machine (logged once). */
  waiting: boolean;
  /** Its machine, as the server last named it. */
  machineId?: number;
  /** This agent process has seen it here (or started it) since it began. */
  seenHere: boolean;
}

const EMPTY: InstanceRecord = { announceLoading: false, waiting: false, seenHere: false };

function isEmpty(r: InstanceRecord): boolean {
  return (
    r.op === undefined &&
    r.generation === undefined &&
    !r.announceLoading &&
    r.progress === undefined &&
    r.failure === undefined &&
    !r.waiting &&
    r.machineId === undefined &&
    !r.seenHere
  );
}

export class InstanceRecords {
  private readonly map = new Map<number, InstanceRecord>();

  /** The instance's record; an empty one when nothing is known of it. */
  get(id: number): Readonly<InstanceRecord> {
    return this.map.get(id) ?? EMPTY;
  }

  /** Changes some facts of an instance (an `undefined` or `false` value clears one). */
  set(id: number, patch: Partial<InstanceRecord>): void {
    const r = { ...this.get(id), ...patch };
    if (isEmpty(r)) this.map.delete(id);
    else this.map.set(id, r);
  }

  /** The ids whose record satisfies `test`. */
  ids(test: (r: Readonly<InstanceRecord>) => boolean): number[] {
    return [...this.map].filter(([, r]) => test(r)).map(([id]) => id);
  }

  /** The operations under way. */
  ops(): OpRecord[] {
    return [...this.map.values()].flatMap((r) => (r.op ? [r.op] : []));
  }

  /** Forgets every instance's machine (before the server names them again). */
  clearMachines(): void {
    for (const id of this.ids((r) => r.machineId !== undefined)) this.set(id, { machineId: undefined });
  }
}
