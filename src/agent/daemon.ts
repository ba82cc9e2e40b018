// The host agent (docs/agent.md): registers its machines,
// then syncs every heartbeat: the sync is the heartbeat, carries what each instance really is,
// and brings back what each should be; the agent then makes it so with its runtime, one operation
// at a time per instance and per machine (stops before starts), and syncs again as soon as
// something changed.
// State in --state-dir: agent.json (its stable agent_uid), held.json (the instances this host has
// had) and instances/ID/ (the runtime's), so a restarted agent gets the same machines back,
// re-adopts the instances that still run, and tells one that vanished from one it never started.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type {
  AgentRequest,
  DesiredInstance,
  InstanceReport,
  SyncResponse,
} from '../contract/agent-protocol.js';
import { generationOf, type InstanceSpec, type ObservedState, type Runtime } from './runtime.js';
import { AgentClient, AgentFatalError, AgentHttpError } from './agent-client.js';
import { UsageMeter, queryGpuUtil } from './usage.js';
import { InstanceJournal } from './instance-journal.js';
import { planReconcile, type LocalState, type ReconcileItem } from './reconcile.js';
import { assertNever } from '../contract/assert-never.js';
import type { AgentMachineHardware } from '../contract/agent-protocol.js';

export interface AgentLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export interface AgentOptions {
  server: string;
  apiKey: string;
  stateDir: string;
  machines: AgentMachineHardware[];
  /** Per slot: CUDA_VISIBLE_DEVICES for the instances of that machine (real GPUs only). */
  devices?: (string | null)[];
  priceGpu?: number;
  priceDisk?: number;
  /** Where renters reach the instances: a fixed address, or found at each registration. */
  publicHost?: string | (() => Promise<string>);
  runtime: Runtime;
  /** OPENRIG_HEARTBEAT_S when set; else the server's value from register. */
  heartbeatS?: number;
  version: string;
  log: AgentLog;
  /** Where the agent's lines about each instance are kept for `daemon_logs` (made here when absent). */
  journal?: InstanceJournal;
  /** OPENRIG_USAGE_INTERVAL_S when set: how often disk usage and GPU utilisation are measured. */
  usageIntervalS?: number;
  /** Utilisation of the host's GPUs by index (default: nvidia-smi); used only with real GPUs. */
  gpuUtil?: () => Promise<Map<string, number> | null>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function loadAgentUid(stateDir: string): string {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = path.join(stateDir, 'agent.json');
  if (existsSync(file)) {
    const j = JSON.parse(readFileSync(file, 'utf8')) as { agent_uid?: string };
    if (j.agent_uid) return j.agent_uid;
  }
  const uid = randomUUID();
  writeFileSync(file, JSON.stringify({ agent_uid: uid }) + '\n', { mode: 0o600, flag: 'w' });
  return uid;
}

/**
 * The instances this host has had (the agent saw them here, or started them), kept in
 * `held.json` in the state directory across restarts. An instance that is absent here while the
 * server shows it unknown or offline vanished if it is listed, and was never started (created
 * just before the agent stopped) if it is not. Each change is written at once (a temporary file
 * renamed over the old one, so a crash leaves one or the other whole).
 */
export class HeldInstances {
  private readonly file: string;
  private readonly ids: Set<number>;

  constructor(stateDir: string) {
    this.file = path.join(stateDir, 'held.json');
    let ids: number[] = [];
    if (existsSync(this.file)) {
      const j = JSON.parse(readFileSync(this.file, 'utf8')) as { ids?: unknown };
      if (Array.isArray(j.ids)) ids = j.ids.filter((x): x is number => Number.isInteger(x));
    }
    this.ids = new Set(ids);
  }

  has(id: number): boolean {
    return this.ids.has(id);
  }

  list(): number[] {
    return [...this.ids];
  }

  add(id: number): void {
    if (this.ids.has(id)) return;
    this.ids.add(id);
    this.save();
  }

  delete(id: number): void {
    if (this.ids.delete(id)) this.save();
  }

  private save(): void {
    const tmp = `${this.file}.tmp`;
    const ids = [...this.ids].sort((a, b) => a - b);
    writeFileSync(tmp, JSON.stringify({ ids }) + '\n', { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}

type Op = 'start' | 'stop' | 'destroy' | 'reboot' | 'recycle' | 'recreate';

export class Agent {
  readonly uid: string;
  readonly client: AgentClient;
  machineIds: number[] = [];
  /** The address registered for renters to reach the instances at (after register). */
  publicHost: string | undefined;
  private slotOf = new Map<number, number>();
  private heartbeatMs = 10_000;
  private stopped = false;
  private wake: (() => void) | null = null;
  /**
   * Operations under way, one per instance; `generation`: the configuration a start, recycle or
   * recreate makes; `start`: whether a recreate runs the new container.
   */
  private readonly ops = new Map<
    number,
    { op: Op; done: Promise<void>; generation?: number; start?: boolean }
  >();
  /** The configuration generation this agent last began to start or create per instance. */
  private readonly genOf = new Map<number, number>();
  /** The server hands out configuration generations and takes them in reports. */
  private configGenerations = false;
  /** Say at registration that this agent recreates by generation (not to a server that refused it). */
  private offerGenerations = true;
  /** Started instances whose `loading` the server has not yet heard. */
  private readonly announceLoading = new Set<number>();
  /** What a start under way is doing (pulling, creating), for the `loading` status_msg. */
  private readonly progress = new Map<number, string>();
  /** Start failures, reported as `exited` until the server wants something else. */
  private readonly failures = new Map<number, string>();
  private loop: Promise<void> | null = null;
  private poked = false;
  /** Client requests (logs, command, reboot, recycle) under way or answered, by request id. */
  private readonly handled = new Set<number>();
  /** Starts that wait for their machine, logged once. */
  private readonly waiting = new Set<number>();
  /** This agent's machines that their host deleted: refused by the server for good. */
  readonly deletedMachines = new Set<number>();

  private readonly journal: InstanceJournal;
  /** Disk usage and GPU utilisation of the instances, measured in the background. */
  readonly usage: UsageMeter;
  /** The server takes them in instance reports (its register answer says so). */
  private usageReports = false;
  /** Each instance's machine, as the server last named it. */
  private readonly machineOf = new Map<number, number>();
  /** The machines have real GPUs (nvidia-smi), not simulated ones. */
  private readonly realGpus: boolean;
  /** The instances this host has had, across restarts. */
  private readonly held: HeldInstances;
  /** The instances this agent process has seen here (or started) since it began. */
  private readonly seenHere = new Set<number>();

  constructor(private readonly o: AgentOptions) {
    if (!o.journal) {
      this.journal = new InstanceJournal();
      this.o = { ...o, log: this.journal.wrap(o.log) };
    } else this.journal = o.journal;
    this.uid = loadAgentUid(o.stateDir);
    this.held = new HeldInstances(o.stateDir);
    this.client = new AgentClient(o.server, o.apiKey);
    const rt = o.runtime;
    this.realGpus = (o.devices ?? []).some((d) => d !== null);
    this.usage = new UsageMeter({
      disk: rt.diskUsage ? (id) => rt.diskUsage!(id) : undefined,
      gpus: this.realGpus ? (o.gpuUtil ?? queryGpuUtil) : undefined,
      intervalMs: o.usageIntervalS !== undefined ? o.usageIntervalS * 1000 : undefined,
      log: this.o.log,
    });
  }

  /** Registers (retrying until the server answers) and starts the sync loop. */
  async start(): Promise<void> {
    await this.register();
    this.loop = this.run();
  }

  private async register(): Promise<void> {
    let delay = 250;
    for (;;) {
      try {
        const ph = this.o.publicHost;
        const publicHost = typeof ph === 'function' ? await ph() : ph;
        const r = await this.client.register({
          agent_uid: this.uid,
          version: this.o.version,
          runtime: this.o.runtime.name,
          ...(publicHost !== undefined ? { public_host: publicHost } : {}),
          ...(this.o.priceGpu !== undefined ? { price_gpu: this.o.priceGpu } : {}),
          ...(this.o.priceDisk !== undefined ? { price_disk: this.o.priceDisk } : {}),
          ...(this.offerGenerations ? { config_generations: true } : {}),
          machines: this.o.machines,
        });
        this.machineIds = r.machines.map((m) => m.machine_id);
        this.publicHost = publicHost;
        this.slotOf = new Map(r.machines.map((m) => [m.machine_id, m.slot]));
        this.heartbeatMs = (this.o.heartbeatS ?? r.heartbeat_s) * 1000;
        this.usageReports = r.usage_reports === true;
        this.configGenerations = r.config_generations === true;
        this.noteDeleted((r.deleted_machines ?? []).map((m) => m.machine_id));
        this.o.log.info(
          this.machineIds.length > 0
            ? `registered machines ${this.machineIds.join(', ')} (heartbeat every ${this.heartbeatMs / 1000}s${publicHost ? `; renters reach them at ${publicHost}` : ''})`
            : 'registered no machine: every machine of this agent was deleted by its host',
        );
        return;
      } catch (err) {
        // A server older than configuration generations refuses the field (its bodies are checked
        // strictly): register without it; updates of this agent's instances are then refused there.
        if (err instanceof AgentFatalError && err.status === 400 && this.offerGenerations) {
          this.offerGenerations = false;
          this.o.log.warn(
            `the server refused config_generations (${err.message}); registering without it: that server cannot update this agent's instances`,
          );
          continue;
        }
        if (err instanceof AgentFatalError || this.stopped) throw err;
        this.o.log.warn(`register failed, retrying: ${(err as Error).message}`);
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /** A step of a start or recycle under way (pull progress), reported in the next sync. */
  setProgress(id: number, step: string): void {
    const op = this.ops.get(id)?.op;
    const msg =
      op === 'recycle' && !step.startsWith('recycling')
        ? `recycling: ${step}`
        : op === 'recreate' && !step.startsWith('updating')
          ? `updating: ${step}`
          : step;
    const was = this.progress.get(id);
    this.progress.set(id, msg);
    // A new step is worth an early sync; byte counts ride along with the next heartbeat.
    if (was === undefined || was.replace(/:.*$/, '') !== msg.replace(/:.*$/, '')) this.poke();
  }

  /** Wakes the loop for an early sync (a local change to report). */
  poke(): void {
    // A poke during a sync (no one waits yet) must not be lost: the loop syncs again at once.
    if (this.wake) this.wake();
    else this.poked = true;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.poked = false;
      try {
        await this.syncOnce();
      } catch (err) {
        if (err instanceof AgentFatalError) {
          this.o.log.error(`the server refused the agent: ${err.message}`);
          this.stopped = true;
          process.exitCode = 1;
          break;
        }
        this.o.log.warn(`sync failed (will retry): ${(err as Error).message}`);
      }
      if (this.stopped) break;
      if (this.poked) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.heartbeatMs);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  private async reports(): Promise<InstanceReport[]> {
    const ids = new Set([...(await this.o.runtime.list()), ...this.ops.keys(), ...this.failures.keys()]);
    const out: InstanceReport[] = [];
    const seen = new Map<number, ObservedState>();
    for (const id of [...ids].sort((a, b) => a - b)) {
      const fail = this.failures.get(id);
      if (this.announceLoading.has(id)) {
        out.push({ id, state: 'loading', status_msg: this.progress.get(id) ?? 'preparing the instance' });
        continue;
      }
      if (fail) {
        out.push({ id, state: 'exited', status_msg: fail });
        continue;
      }
      const op = this.ops.get(id);
      // An update under way: loading, or stopped for a stopped instance (replaced, not started).
      if (op?.op === 'recreate') {
        const step = this.progress.get(id) ?? 'updating: recreating the container';
        out.push({ id, state: op.start ? 'loading' : 'stopped', status_msg: step });
        continue;
      }
      // A reboot or recycle under way: loading (the server holds `running` until it is done).
      if (op?.op === 'reboot' || op?.op === 'recycle') {
        out.push({ id, state: 'loading', status_msg: this.progress.get(id) ?? `${op.op} under way` });
        continue;
      }
      const st = await this.o.runtime.inspect(id);
      seen.set(id, st);
      if (st.state !== 'absent') this.holds(id);
      if (op?.op === 'start' && st.state !== 'exited') {
        out.push({ id, state: 'loading', status_msg: this.progress.get(id) ?? 'preparing the instance' });
        continue;
      }
      switch (st.state) {
        case 'absent':
          break;
        case 'stopped':
          out.push({ id, state: 'stopped', status_msg: 'stopped' });
          break;
        case 'starting':
          out.push({ id, state: 'loading', status_msg: 'starting the SSH server' });
          break;
        case 'running':
          out.push({
            id,
            state: 'running',
            status_msg: 'running; SSH accepts connections',
            ssh_port: st.sshPort,
            ...(st.ports ? { ports: st.ports } : {}),
          });
          break;
        case 'exited':
          out.push({ id, state: 'exited', status_msg: st.msg });
          break;
      }
    }
    this.usage.retain(ids);
    if (this.usageReports) for (const r of out) Object.assign(r, this.measured(r));
    if (this.configGenerations) {
      for (const r of out) {
        const g = this.reportedGeneration(r.id, seen.get(r.id));
        if (g !== undefined) r.generation = g;
      }
    }
    return out;
  }

  /**
   * The latest figures of an instance for its report: its disk once measured, and the mean
   * utilisation of its machine's GPUs while it runs (null otherwise, and with simulated GPUs).
   */
  private measured(r: InstanceReport): Pick<InstanceReport, 'disk_usage_bytes' | 'gpu_util'> {
    const disk = this.usage.disk(r.id);
    const machine = this.machineOf.get(r.id);
    const slot = machine === undefined ? undefined : this.slotOf.get(machine);
    let gpu: number | null | undefined = null;
    if (r.state === 'running' && this.realGpus)
      // Which GPUs are its own is known once the server has named its machine.
      gpu =
        slot === undefined
          ? undefined
          : this.usage.gpuUtil((this.o.devices?.[slot] ?? '').split(',').filter(Boolean));
    return {
      ...(disk !== undefined ? { disk_usage_bytes: disk } : {}),
      ...(gpu !== undefined ? { gpu_util: gpu } : {}),
    };
  }

  async syncOnce(): Promise<void> {
    const reports = await this.reports();
    const announced = reports
      .filter((r) => r.state === 'loading' && this.announceLoading.has(r.id))
      .map((r) => r.id);
    const instances = reports.map((r) =>
      r.status_msg && r.status_msg.length > 500 ? { ...r, status_msg: r.status_msg.slice(0, 500) } : r,
    );
    let res: SyncResponse;
    try {
      res = await this.client.sync({ agent_uid: this.uid, machine_ids: this.machineIds, instances });
    } catch (err) {
      // A server that no longer takes the measurements (one replaced by an older version under a
      // running agent) refuses the whole sync: the next ones go without them, until the agent
      // registers again and the server says otherwise.
      const carried = instances.some((r) => r.disk_usage_bytes !== undefined || r.gpu_util !== undefined);
      if (err instanceof AgentHttpError && err.status === 400 && carried) {
        this.usageReports = false;
        this.o.log.warn(
          `the server refused a sync carrying disk and GPU usage (${err.message}); syncing without them`,
        );
        this.poke();
      }
      throw err;
    }
    this.machineOf.clear();
    for (const w of res.instances) if (w.machine_id !== 0) this.machineOf.set(w.id, w.machine_id);
    if (this.o.heartbeatS === undefined) this.heartbeatMs = res.heartbeat_s * 1000;
    // Machines their host deleted are refused for good: dropped, never registered again. Their
    // instances were destroyed with them, so the reconcile below removes what is left here.
    const deleted = res.deleted_machine_ids ?? [];
    if (deleted.length > 0) {
      this.noteDeleted(deleted);
      this.machineIds = this.machineIds.filter((id) => !deleted.includes(id));
      for (const id of deleted) this.slotOf.delete(id);
    }
    const unknown = res.unknown_machine_ids.filter((id) => !deleted.includes(id));
    if (unknown.length > 0) {
      this.o.log.warn(`the server does not know machines ${unknown.join(', ')}; registering again`);
      await this.register();
    }
    for (const id of announced) this.announceLoading.delete(id);
    await this.reconcileAll(res.instances, unknown.length === 0);
    for (const r of res.requests ?? []) this.handleRequest(r, res.instances);
    if (this.machineIds.length === 0 && this.deletedMachines.size > 0 && this.ops.size === 0) {
      if ((await this.o.runtime.list()).length === 0)
        throw new AgentFatalError(
          `every machine of this agent was deleted by its host (${[...this.deletedMachines].join(', ')}) and nothing is left to serve; start the agent with a fresh --state-dir to register new machines`,
        );
    }
  }

  /** Logs once, as an error, each machine the server refuses because its host deleted it. */
  private noteDeleted(ids: number[]): void {
    for (const id of ids) {
      if (this.deletedMachines.has(id)) continue;
      this.deletedMachines.add(id);
      this.o.log.error(
        `machine ${id} was deleted by its host: the server refuses it, and this agent serves it no more`,
      );
    }
  }

  private spec(w: DesiredInstance): InstanceSpec {
    const slot = this.slotOf.get(w.machine_id);
    const devices = slot === undefined ? null : (this.o.devices?.[slot] ?? null);
    const hw = this.o.machines.find((m) => m.slot === slot);
    return {
      id: w.id,
      image: w.image,
      disk: w.disk,
      onstart: w.onstart,
      // Older servers send neither: the instance runs the usual way, with onstart.
      args: w.args ?? null,
      entrypoint: w.entrypoint ?? null,
      authorizedKeys: w.authorized_keys,
      ports: w.ports ?? [],
      imageLogin: w.image_login ?? null,
      limits:
        hw && hw.cpu_cores > 0 && hw.cpu_ram > 0 ? { cpus: hw.cpu_cores, memoryMb: hw.cpu_ram } : undefined,
      gpus: devices === null ? null : devices.split(',').filter(Boolean),
      publicHost: this.publicHost,
      generation: w.generation,
      env: {
        ...w.env,
        CONTAINER_ID: String(w.id),
        OPENRIG_INSTANCE_ID: String(w.id),
        OPENRIG_SERVER_URL: this.client.serverUrl,
        ...(w.container_api_key ? { CONTAINER_API_KEY: w.container_api_key } : {}),
        ...(devices !== null ? { CUDA_VISIBLE_DEVICES: devices, NVIDIA_VISIBLE_DEVICES: devices } : {}),
      },
    };
  }

  /**
   * Decides for all instances at once, per machine (reconcile.ts planReconcile): stops and
   * destroys begin first, and a start waits while another instance of its machine still runs,
   * starts or stops here (a stop frees the machine on the server at once, so the next renter's
   * start may arrive before the old container is gone). Called only from the sync loop, one
   * round at a time; operations run in the background and wake the loop when they end.
   * `complete`: the server answered for every machine of this agent (it knew them all).
   */
  private async reconcileAll(wants: DesiredInstance[], complete: boolean): Promise<void> {
    const rt = this.o.runtime;
    const items: ReconcileItem[] = [];
    const local = new Map<number, LocalState>();
    for (const w of wants) {
      const st = this.ops.has(w.id) ? null : await rt.inspect(w.id);
      // An instance under way keeps the machine taken whatever its files say right now.
      const state: LocalState = st?.state ?? 'starting';
      local.set(w.id, state);
      if (st && st.state !== 'absent') this.holds(w.id);
      if (w.desired === 'destroyed' && state === 'absent') {
        this.failures.delete(w.id);
        this.held.delete(w.id);
      }
      items.push({
        id: w.id,
        machineId: w.machine_id,
        local: state,
        ...this.freshness(w, st),
        busy: this.ops.has(w.id),
        desired: w.desired,
        serverActual: w.actual_status,
        held: this.held.has(w.id),
      });
    }
    // Instances here that the server did not mention still occupy their GPUs (machine unknown).
    for (const id of await rt.list()) {
      if (local.has(id) || this.ops.has(id)) continue;
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
      for (const id of this.held.list())
        if (!byId.has(id) && !listed.has(id) && !this.ops.has(id)) this.held.delete(id);
    }
    for (const { id, action } of planReconcile(items, this.machineIds)) {
      const w = byId.get(id);
      if (!w) continue;
      if (action !== 'wait') this.waiting.delete(id);
      const here = local.get(id)!;
      try {
        switch (action) {
          case 'wait':
            if (!this.waiting.has(id))
              this.o.log.info(
                `instance ${id}: start waits until the machine's other instance has stopped here`,
              );
            this.waiting.add(id);
            break;
          case 'destroy':
            this.failures.delete(id);
            this.genOf.delete(id);
            this.announceLoading.delete(id);
            this.runOp(id, 'destroy', () =>
              rt.destroy(id).then(() => {
                this.held.delete(id);
                this.o.log.info(`instance ${id} destroyed`);
              }),
            );
            break;
          case 'stop':
            this.failures.delete(id);
            this.announceLoading.delete(id);
            this.o.log.info(`instance ${id}: stop (${here} here)`);
            this.runOp(id, 'stop', () => rt.stop(id).then(() => this.o.log.info(`instance ${id} stopped`)));
            break;
          case 'start':
          case 'restart': {
            const spec = this.spec(w);
            this.failures.delete(id);
            this.genOf.set(id, spec.generation ?? 1);
            // The server hears `loading` at least once before any failure of this start, so a
            // failed restart is not mistaken for the stale `exited` of before the client's start.
            this.announceLoading.add(id);
            this.o.log.info(
              `instance ${id}: ${action} (${here} here, ${w.actual_status ?? 'null'} on the server)`,
            );
            this.runOp(id, 'start', async () => {
              if (here === 'exited') await rt.stop(id); // clears the dead main.pid
              const { sshPort } = await rt.start(spec);
              this.holds(id);
              this.o.log.info(`instance ${id} running, SSH on port ${sshPort}`);
            });
            this.poke(); // report `loading` at once
            break;
          }
          case 'update-keys':
            await rt.updateKeys(id, w.authorized_keys);
            break;
          case 'gone': {
            // It was here (the server saw it run, or this host had it) and nothing of it is left:
            // it is reported exited, never silently made anew; a client's start makes it anew.
            const when =
              this.seenHere.has(id) && w.actual_status === 'running'
                ? `its ${rt.name === 'docker' ? 'container was' : 'files were'} removed while it ran`
                : 'found missing when its agent came back';
            this.failures.set(id, `the instance is gone from the host (${when})`);
            this.genOf.set(id, w.generation ?? 1);
            this.o.log.warn(
              `instance ${id}: gone from the host (${w.actual_status ?? 'null'} on the server, nothing here); reported exited`,
            );
            this.poke();
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
        this.o.log.error(`instance ${id}: ${(err as Error).message}`);
      }
    }
  }

  /**
   * Carries out a client's request once, in the background, and posts its outcome (the output of
   * logs and command). A request the server still lists while its answer is on the way is not
   * run twice; one whose answer could not be posted is tried again at a later sync.
   */
  private handleRequest(r: AgentRequest, wants: DesiredInstance[]): void {
    if (this.handled.has(r.id)) return;
    this.handled.add(r.id);
    const rt = this.o.runtime;
    const w = wants.find((x) => x.id === r.instance_id);
    const run = async (): Promise<string> => {
      switch (r.kind) {
        case 'logs': {
          const text = r.daemon
            ? this.journal.text(r.instance_id, r.tail ?? null)
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
        if (!result.ok) this.o.log.warn(`instance ${r.instance_id}: ${r.kind} failed: ${result.output}`);
        await this.client.results({ agent_uid: this.uid, machine_ids: this.machineIds, results: [result] });
        this.poke();
      })
      .catch((err: Error) => {
        this.o.log.warn(`instance ${r.instance_id}: could not send the ${r.kind} result: ${err.message}`);
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
    if (this.ops.has(id)) throw new Error('another operation of the instance is under way');
    const rt = this.o.runtime;
    const spec = this.spec(w);
    let finish = () => {};
    this.ops.set(id, {
      op: kind,
      done: new Promise<void>((resolve) => (finish = resolve)),
      ...(kind === 'recycle' ? { generation: spec.generation ?? 1 } : {}),
    });
    this.progress.set(
      id,
      kind === 'reboot'
        ? 'rebooting: restarting the container'
        : `recycling: ${rt.name === 'docker' ? `pulling ${w.image} again` : 'starting afresh'}`,
    );
    this.failures.delete(id);
    this.poke(); // report `loading` with the step at once
    this.o.log.info(`instance ${id}: ${kind}`);
    try {
      await (kind === 'reboot' ? rt.reboot(spec) : rt.recycle(spec));
      const past = kind === 'reboot' ? 'rebooted' : 'recycled';
      this.o.log.info(`instance ${id} ${past}`);
      return `${past}: the container started again at ${new Date().toISOString()}\n`;
    } catch (err) {
      const st = await rt.inspect(id).catch(() => null);
      if (st?.state !== 'running') {
        this.failures.set(id, `${kind} failed: ${(err as Error).message}`);
        this.genOf.set(id, spec.generation ?? 1);
      }
      throw err;
    } finally {
      this.ops.delete(id);
      this.progress.delete(id);
      finish();
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
    const rt = this.o.runtime;
    const spec = this.spec(w);
    const generation = spec.generation ?? 1;
    this.failures.delete(id);
    this.announceLoading.delete(id);
    this.genOf.set(id, generation);
    this.o.log.info(
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
        this.o.log.info(`instance ${id} recreated from configuration generation ${generation}`);
      },
      { generation, start },
    );
    this.poke(); // report the step at once
  }

  /**
   * Whether the instance here is of an older configuration generation than the server's (an
   * update to carry out: `stale`), and whether its last start failed at the current one
   * (`failed`: not tried again by itself). A failure at an older generation makes it stale, so an
   * update is also the way out of a failed start. An older server sends no generation: nothing is
   * ever outdated then.
   */
  private freshness(w: DesiredInstance, st: ObservedState | null): { failed: boolean; stale: boolean } {
    const failedAt = this.failures.has(w.id) ? (this.genOf.get(w.id) ?? 1) : null;
    const want = w.generation;
    if (want === undefined) return { failed: failedAt !== null, stale: false };
    const outdated = st !== null && st.state !== 'absent' && generationOf(st) < want;
    return {
      failed: failedAt !== null && failedAt >= want,
      stale: outdated || (failedAt !== null && failedAt < want),
    };
  }

  /** The generation an instance's report describes: what is being made, what failed, or what is here. */
  private reportedGeneration(id: number, st: ObservedState | undefined): number | undefined {
    const op = this.ops.get(id);
    if (this.announceLoading.has(id) || this.failures.has(id)) return this.genOf.get(id);
    if (op?.op === 'recreate' || op?.op === 'recycle' || op?.op === 'reboot') return op.generation;
    if (op?.op === 'start' && st?.state !== 'exited') return this.genOf.get(id);
    return st && st.state !== 'absent' ? generationOf(st) : undefined;
  }

  /** Notes that this host has the instance (seen here, or started). */
  private holds(id: number): void {
    this.seenHere.add(id);
    this.held.add(id);
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
        this.o.log.error(`instance ${id}: ${msg}`);
        if (op === 'start' || op === 'recreate') this.failures.set(id, msg);
      })
      .finally(() => {
        this.ops.delete(id);
        this.progress.delete(id);
        this.poke();
      });
    this.ops.set(id, { op, done, ...extra });
  }

  /**
   * A clean stop: finishes running operations, tells the server (its machines go offline at once)
   * and, when asked (the demo), stops the instances' processes too; otherwise they keep running
   * and a restarted agent re-adopts them.
   */
  async shutdown(opts: { stopInstances?: boolean; notify?: boolean } = {}): Promise<void> {
    this.stopped = true;
    this.poke();
    await Promise.race([Promise.all([...this.ops.values()].map((o) => o.done)), sleep(10_000)]);
    await this.loop?.catch(() => {});
    if (opts.stopInstances) {
      for (const id of await this.o.runtime.list()) await this.o.runtime.stop(id).catch(() => {});
    }
    if (opts.notify !== false && this.machineIds.length > 0) {
      await this.client
        .shutdown({ agent_uid: this.uid, machine_ids: this.machineIds })
        .catch((err) => this.o.log.warn(`could not tell the server: ${(err as Error).message}`));
    }
  }
}
