// A client's requests about an instance, which the server hands the agent in a sync's answer:
// logs (the container's, or the agent's own journal with `daemon`), a command, a reboot or a
// recycle. Each is carried out once, in the background, and its outcome posted back.
import type { AgentRequest, DesiredInstance, ResultsRequest } from '../contract/agent-protocol.js';
import { assertNever } from '../contract/assert-never.js';
import type { AgentLog } from './agent-log.js';
import type { InstanceJournal } from './instance-journal.js';
import type { InstanceRecords } from './instance-records.js';
import type { InstanceSpec, Runtime } from './runtime.js';

/** What the requests need of the agent. */
export interface RequestHost {
  readonly runtime: Runtime;
  readonly log: AgentLog;
  readonly journal: InstanceJournal;
  readonly records: InstanceRecords;
  /** What the instance is to be made of, from the server's description. */
  spec(w: DesiredInstance): InstanceSpec;
  /** Posts the outcome of requests to the server. */
  postResults(results: ResultsRequest['results']): Promise<void>;
  /** Asks the sync loop for an early sync. */
  poke(): void;
}

export class ClientRequests {
  /** Requests under way or answered, by request id. */
  private readonly handled = new Set<number>();

  constructor(private readonly host: RequestHost) {}

  /**
   * Carries out a client's request once, in the background, and posts its outcome (the output of
   * logs and command). A request the server still lists while its answer is on the way is not
   * run twice; one whose answer could not be posted is tried again at a later sync.
   */
  handle(r: AgentRequest, wants: DesiredInstance[]): void {
    if (this.handled.has(r.id)) return;
    this.handled.add(r.id);
    const { runtime: rt, journal, log } = this.host;
    const w = wants.find((x) => x.id === r.instance_id);
    const run = async (): Promise<string> => {
      switch (r.kind) {
        case 'logs': {
          const text = r.daemon
            ? journal.text(r.instance_id, r.tail ?? null)
            : await rt.logs(r.instance_id, r.tail ?? null);
          if (!r.filter) return text;
          return text
            .split('\n')
            .filter((l) => l.includes(r.filter!))
            .join('\n');
        }
        case 'command':
          return rt.execute(r.instance_id, r.argv ?? []);
        case 'reboot':
        case 'recycle':
          return this.restart(r.kind, w);
        default:
          return assertNever(r.kind, 'request kind');
      }
    };
    void run()
      .then(
        (output) => ({ id: r.id, ok: true, output }),
        (err: Error) => ({ id: r.id, ok: false, output: err.message }),
      )
      .then(async (result) => {
        if (!result.ok) log.warn(`instance ${r.instance_id}: ${r.kind} failed: ${result.output}`);
        await this.host.postResults([result]);
        this.host.poke();
      })
      .catch((err: Error) => {
        log.warn(`instance ${r.instance_id}: could not send the ${r.kind} result: ${err.message}`);
        this.handled.delete(r.id);
      });
    // Answered requests drop out of the server's list; the set only needs the recent ones.
    if (this.handled.size > 10_000) this.handled.delete(this.handled.values().next().value!);
  }

  /**
   * Carries out a reboot or recycle as an operation of the instance: meanwhile it is reported
   * `loading` (with the step, e.g. `recycling: pulling ubuntu:22.04: 312/845 MB`) and the reconcile
   * leaves it alone. Its answer names the container's new start time. When it fails and the
   * instance no longer runs here, the instance is reported `exited` with the reason (a client's
   * start brings it back); when it still runs (a recycle whose pull failed), it stays as it was.
   */
  private async restart(kind: 'reboot' | 'recycle', w: DesiredInstance | undefined): Promise<string> {
    if (!w) throw new Error('the instance is not on this agent');
    const id = w.id;
    if (w.desired !== 'running') throw new Error(`the instance is to be ${w.desired}, not restarted`);
    const { runtime: rt, records, log } = this.host;
    if (records.get(id).op) throw new Error('another operation of the instance is under way');
    const spec = this.host.spec(w);
    let finish = () => {};
    records.set(id, {
      op: {
        op: kind,
        done: new Promise<void>((resolve) => (finish = resolve)),
        ...(kind === 'recycle' ? { generation: spec.generation ?? 1 } : {}),
      },
      progress:
        kind === 'reboot'
          ? 'rebooting: restarting the container'
          : `recycling: ${rt.name === 'docker' ? `pulling ${w.image} again` : 'starting afresh'}`,
      failure: undefined,
    });
    this.host.poke(); // report `loading` with the step at once
    log.info(`instance ${id}: ${kind}`);
    try {
      await (kind === 'reboot' ? rt.reboot(spec) : rt.recycle(spec));
      const past = kind === 'reboot' ? 'rebooted' : 'recycled';
      log.info(`instance ${id} ${past}`);
      return `${past}: the container started again at ${new Date().toISOString()}\n`;
    } catch (err) {
      const st = await rt.inspect(id).catch(() => null);
      if (st?.state !== 'running')
        records.set(id, {
          failure: `${kind} failed: ${(err as Error).message}`,
          generation: spec.generation ?? 1,
        });
      throw err;
    } finally {
      records.set(id, { op: undefined, progress: undefined });
      finish();
    }
  }
}
