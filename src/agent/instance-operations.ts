// Carrying out what the server wants of each instance: the plan of a sync round
// (reconcile.ts planReconcile) turned into the runtime's operations, one at a time per instance,
// each in the background and waking the sync loop when it ends; and the instance updates
// (recreating a container of an older configuration generation).
import type { DesiredInstance } from '../contract/agent-protocol.js';
import { assertNever } from '../contract/assert-never.js';
import type { AgentLog } from './agent-log.js';
import type { InstanceRecords, Op } from './instance-records.js';
import { planReconcile, type LocalState, type ReconcileItem } from './reconcile.js';
import { generationOf, type InstanceSpec, type ObservedState, type Runtime } from './runtime.js';
import type { HeldInstances } from './state-dir.js';

/** What the operations need of the agent. */
export interface OperationsHost {
  readonly runtime: Runtime;
  readonly log: AgentLog;
  readonly records: InstanceRecords;
  /** The instances this host has had, across restarts. */
  readonly held: HeldInstances;
  /** This agent's machines, as last registered. */
  machineIds(): number[];
  /** What the instance is to be made of, from the server's description. */
  spec(w: DesiredInstance): InstanceSpec;
  /** Asks the sync loop for an early sync. */
  poke(): void;
}

export class InstanceOperations {
  constructor(private readonly host: OperationsHost) {}

  /**
   * Decides for all instances at once, per machine (reconcile.ts planReconcile): stops and
   * destroys begin first, and a start waits while another instance of its machine still runs,
   * starts or stops here (a stop frees the machine on the server at once, so the next renter's
   * start may arrive before the old container is gone). Called only from the sync loop, one
   * round at a time; operations run in the background and wake the loop when they end.
   * `complete`: the server answered for every machine of this agent (it knew them all).
   */
  async reconcileAll(wants: DesiredInstance[], complete: boolean): Promise<void> {
    const rt = this.host.runtime;
    const items: ReconcileItem[] = [];
    const local = new Map<number, LocalState>();
    for (const w of wants) {
      const st = this.host.records.get(w.id).op ? null : await rt.inspect(w.id);
      // An instance under way keeps the machine taken whatever its files say right now.
      const state: LocalState = st?.state ?? 'starting';
      local.set(w.id, state);
      if (st && st.state !== 'absent') this.holds(w.id);
      if (w.desired === 'destroyed' && state === 'absent') {
        this.host.records.set(w.id, { failure: undefined });
        this.host.held.delete(w.id);
      }
      items.push({
        id: w.id,
        machineId: w.machine_id,
        local: state,
        ...this.freshness(w, st),
        busy: this.host.records.get(w.id).op !== undefined,
        desired: w.desired,
        serverActual: w.actual_status,
        held: this.host.held.has(w.id),
      });
    }
    // Instances here that the server did not mention still occupy their GPUs (machine unknown).
    for (const id of await rt.list()) {
      if (local.has(id) || this.host.records.get(id).op) continue;
      const st = await rt.inspect(id);
      if (st.state === 'running' || st.state === 'starting') {
        items.push({
          id,
          machineId: 0,
          local: st.state,
          failed: false,
          busy: true,
          desired: 'running',
          serverActual: null,
        });
      }
    }
    const byId = new Map(wants.map((w) => [w.id, w]));
    // What the server no longer lists for any of this agent's machines, and that is not here,
    // is forgotten (destroyed while the agent was away, its container gone too).
    if (complete) {
      const listed = new Set(await rt.list());
      for (const id of this.host.held.list())
        if (!byId.has(id) && !listed.has(id) && !this.host.records.get(id).op) this.host.held.delete(id);
    }
    for (const { id, action } of planReconcile(items, this.host.machineIds())) {
      const w = byId.get(id);
      if (!w) continue;
      if (action !== 'wait') this.host.records.set(id, { waiting: false });
      const here = local.get(id)!;
      try {
        switch (action) {
          case 'wait':
            if (!this.host.records.get(id).waiting)
              this.host.log.info(
                `instance ${id}: start waits until the machine's other instance has stopped here`,
              );
            this.host.records.set(id, { waiting: true });
            break;
          case 'destroy':
            this.host.records.set(id, { failure: undefined, generation: undefined, announceLoading: false });
            this.runOp(id, 'destroy', () =>
              rt.destroy(id).then(() => {
                this.host.held.delete(id);
                this.host.log.info(`instance ${id} destroyed`);
              }),
            );
            break;
          case 'stop':
            this.host.records.set(id, { failure: undefined, announceLoading: false });
            this.host.log.info(
              `instance ${id}: stop (${here} here)${w.stop_grace_s !== undefined ? `: preempted, SIGTERM and up to ${w.stop_grace_s} s of grace` : ''}`,
            );
            // A preempted instance gets the rest of its grace period between SIGTERM and the kill.
            this.runOp(id, 'stop', () =>
              rt.stop(id, w.stop_grace_s).then(() => this.host.log.info(`instance ${id} stopped`)),
            );
            break;
          case 'start':
          case 'restart': {
            const spec = this.host.spec(w);
            // The server hears `loading` at least once before any failure of this start, so a
            // failed restart is not mistaken for the stale `exited` of before the client's start.
            this.host.records.set(id, {
              failure: undefined,
              generation: spec.generation ?? 1,
              announceLoading: true,
            });
            this.host.log.info(
              `instance ${id}: ${action} (${here} here, ${w.actual_status ?? 'null'} on the server)`,
            );
            this.runOp(id, 'start', async () => {
              if (here === 'exited') await rt.stop(id); // clears the dead main.pid
              const { sshPort } = await rt.start(spec);
              this.holds(id);
              this.host.log.info(`instance ${id} running, SSH on port ${sshPort}`);
            });
            this.host.poke(); // report `loading` at once
            break;
          }
          case 'update-keys':
            await rt.updateKeys(id, w.authorized_keys);
            break;
          case 'gone': {
            // It was here (the server saw it run, or this host had it) and nothing of it is left:
            // it is reported exited, never silently made anew; a client's start makes it anew.
            const when =
              this.host.records.get(id).seenHere && w.actual_status === 'running'
                ? `its ${rt.name === 'docker' ? 'container was' : 'files were'} removed while it ran`
                : 'found missing when its agent came back';
            this.host.records.set(id, {
              failure: `the instance is gone from the host (${when})`,
              generation: w.generation ?? 1,
            });
            this.host.log.warn(
              `instance ${id}: gone from the host (${w.actual_status ?? 'null'} on the server, nothing here); reported exited`,
            );
            this.host.poke();
            break;
          }
          case 'recreate':
          case 'recreate-stopped':
            this.recreate(w, action === 'recreate', here);
            break;
          default:
            assertNever(action, 'agent action');
        }
      } catch (err) {
        this.host.log.error(`instance ${id}: ${(err as Error).message}`);
      }
    }
  }

  /**
   * Carries out an update: the instance's container (or files) of an older configuration is
   * replaced by one made from the server's, run when the instance is to run, left stopped when it
   * is stopped. Meanwhile it is reported `loading` (or `stopped`) with the step and the new
   * generation, so the server holds the old container's reports. When it fails, what is left of
   * the old one is stopped and the instance is reported `exited` with the reason (a client's start
   * tries again); it is not retried by itself.
   */
  private recreate(w: DesiredInstance, start: boolean, here: LocalState): void {
    const id = w.id;
    const rt = this.host.runtime;
    const spec = this.host.spec(w);
    const generation = spec.generation ?? 1;
    this.host.records.set(id, { failure: undefined, announceLoading: false, generation });
    this.host.log.info(
      `instance ${id}: update to configuration generation ${generation}: recreating the container (${here} here${start ? '' : ', left stopped'}); what the old one wrote is gone`,
    );
    this.runOp(
      id,
      'recreate',
      async () => {
        try {
          await rt.recreate(spec, { start });
        } catch (err) {
          if (start) await rt.stop(id).catch(() => {});
          throw err;
        }
        this.host.log.info(`instance ${id} recreated from configuration generation ${generation}`);
      },
      { generation, start },
    );
    this.host.poke(); // report the step at once
  }

  /**
   * Whether the instance here is of an older configuration generation than the server's (an
   * update to carry out: `stale`), and whether its last start failed at the current one
   * (`failed`: not tried again by itself). A failure at an older generation makes it stale, so an
   * update is also the way out of a failed start. An older server sends no generation: nothing is
   * ever outdated then.
   */
  private freshness(w: DesiredInstance, st: ObservedState | null): { failed: boolean; stale: boolean } {
    const rec = this.host.records.get(w.id);
    const failedAt = rec.failure !== undefined ? (rec.generation ?? 1) : null;
    const want = w.generation;
    if (want === undefined) return { failed: failedAt !== null, stale: false };
    const outdated = st !== null && st.state !== 'absent' && generationOf(st) < want;
    return {
      failed: failedAt !== null && failedAt >= want,
      stale: outdated || (failedAt !== null && failedAt < want),
    };
  }

  /** Notes that this host has the instance (seen here, or started). */
  holds(id: number): void {
    this.host.records.set(id, { seenHere: true });
    this.host.held.add(id);
  }

  /** Runs one operation of an instance in the background; its end wakes the loop for a sync. */
  private runOp(
    id: number,
    op: Op,
    fn: () => Promise<void>,
    extra: { generation?: number; start?: boolean } = {},
  ): void {
    const done = fn()
      .catch((err) => {
        const msg = `failed to ${op}: ${(err as Error).message}`;
        this.host.log.error(`instance ${id}: ${msg}`);
        if (op === 'start' || op === 'recreate') this.host.records.set(id, { failure: msg });
      })
      .finally(() => {
        this.host.records.set(id, { op: undefined, progress: undefined });
        this.host.poke();
      });
    this.host.records.set(id, { op: { op, done, ...extra } });
  }
}
