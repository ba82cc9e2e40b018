// The host agent (docs/agent.md): registers its machines,
// then syncs every heartbeat: the sync is the heartbeat, carries what each instance really is
// (instance-reports.ts), and brings back what each should be and the clients' requests
// (client-requests.ts); the agent then makes it so with its runtime (instance-operations.ts), one
// operation at a time per instance and per machine (stops before starts), and syncs again as soon
// as something changed.
// What it knows of each instance is one record per instance (instance-records.ts).
// State in --state-dir (state-dir.ts): agent.json (its stable agent_uid), held.json (the instances
// this host has had) and instances/ID/ (the runtime's), so a restarted agent gets the same
// machines back, re-adopts the instances that still run, and tells one that vanished from one it
// never started.
import type { DesiredInstance, InstanceReport, LoopDelay, SyncResponse } from '../contract/agent-protocol.js';
import type { InstanceSpec, Runtime } from './runtime.js';
import { AgentClient, AgentFatalError, AgentHttpError } from './agent-client.js';
import { UsageMeter, queryGpuUtil } from './usage.js';
import { InstanceJournal } from './instance-journal.js';
import type { AgentMachineHardware } from '../contract/agent-protocol.js';
import type { AgentLog } from './agent-log.js';
import { HeldInstances, loadAgentUid } from './state-dir.js';
import { InstanceRecords } from './instance-records.js';
import { ClientRequests } from './client-requests.js';
import { InstanceOperations } from './instance-operations.js';
import { instanceReports } from './instance-reports.js';
import { WaitLoop } from './agent-wait.js';
import { CopyRunner } from './copy-runner.js';
import { TunnelClient } from './tunnel.js';
import { runBenchmarks, type BenchmarkDeps } from './benchmarks/index.js';

export type { AgentLog } from './agent-log.js';
export { HeldInstances, loadAgentUid } from './state-dir.js';

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
  /** Where the machines are ("Oslo, NO" or "NO"), for renters' searches by country. */
  location?: string;
  /** Where SSH servers listen (the instances', and those opened for volume clones); default all. */
  sshBind?: string;
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
  /** The event loop's delay since the previous call (loop-delay.ts), sent with each sync. */
  loopDelay?: () => LoopDelay;
  /**
   * The machine benchmarks (benchmarks/index.ts), run after each registration and on the server's
   * schedule when the server takes them; absent: none. `realGpus`: the GPUs are the host's
   * (nvidia-smi), not simulated.
   */
  benchmarks?: { realGpus: boolean } & Partial<Pick<BenchmarkDeps, 'gpus' | 'host'>>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The interval timer's longest delay (about 24.8 days): a longer schedule is clamped to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class Agent {
  readonly uid: string;
  readonly client: AgentClient;
  machineIds: number[] = [];
  /** The address registered for renters to reach the instances at (after register). */
  publicHost: string | undefined;
  /** Each machine's verification, as the server said at registration (absent from older servers). */
  verification = new Map<number, 'verified' | 'unverified' | 'deverified'>();
  /** The operator's rule for how a machine becomes verified (absent from older servers). */
  verificationRule: string | undefined;
  private slotOf = new Map<number, number>();
  private heartbeatMs = 10_000;
  private stopped = false;
  private wake: (() => void) | null = null;
  /** What this agent knows of each instance (operations, failures, progress...), by id. */
  private readonly records = new InstanceRecords();
  /** The server hands out configuration generations and takes them in reports. */
  private configGenerations = false;
  /** Say at registration that this agent recreates by generation (not to a server that refused it). */
  private offerGenerations = true;
  private loop: Promise<void> | null = null;
  /** The benchmarks' schedule (after a registration the server said `benchmarks`). */
  private benchTimer: NodeJS.Timeout | null = null;
  /** The run under way, if any: runs never overlap. */
  private benchRun: Promise<void> | null = null;
  private poked = false;
  /** This agent's machines that their host deleted: refused by the server for good. */
  readonly deletedMachines = new Set<number>();

  private readonly journal: InstanceJournal;
  /** Disk usage and GPU utilisation of the instances, measured in the background. */
  readonly usage: UsageMeter;
  /** The server takes them in instance reports (its register answer says so). */
  private usageReports = false;
  /** The server takes the event-loop delay in a sync (its register answer says so). */
  private loopDelayReports = false;
  /** The long poll that wakes the sync loop (agent-wait.ts), when the server answers waits. */
  private waits: WaitLoop | null = null;
  /** A registration said `long_polls`: the wait loop (re)starts after the next sync. */
  private startWaits = false;
  /** The highest client request id the server has handed this agent (the wait's cursor). */
  private lastRequestId = 0;
  /** Callers of syncNow, resolved once the next sync is done. */
  private syncWaiters: (() => void)[] = [];
  /** The machines have real GPUs (nvidia-smi), not simulated ones. */
  private readonly realGpus: boolean;
  /** The instances this host has had, across restarts. */
  private readonly held: HeldInstances;
  /** The clients' requests the server hands over (logs, command, reboot, recycle). */
  private readonly requests: ClientRequests;
  /** What the server wants of each instance, carried out with the runtime. */
  private readonly operations: InstanceOperations;
  /** The copies whose source is on this agent's machines (copy-runner.ts). */
  private readonly copies: CopyRunner;
  /** False once the server answered that it has no copies (an older server). */
  private copiesServed = true;
  /** The gateway's tunnels to the serving processes that ask for one (tunnel.ts). */
  readonly tunnels: TunnelClient;

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
    this.operations = new InstanceOperations({
      runtime: rt,
      log: this.o.log,
      records: this.records,
      held: this.held,
      machineIds: () => this.machineIds,
      spec: (w) => this.spec(w),
      poke: () => this.poke(),
    });
    // A gateway stream reaches only an instance the server placed on one of this agent's machines.
    this.tunnels = new TunnelClient({
      server: o.server,
      apiKey: o.apiKey,
      uid: this.uid,
      log: this.o.log,
      machineIds: () => this.machineIds,
      target: async (id, port) => {
        if (this.records.get(id).machineId === undefined) return null;
        return rt.gatewayTarget ? rt.gatewayTarget(id, port) : { host: '127.0.0.1', port };
      },
    });
    this.copies = new CopyRunner({
      client: this.client,
      uid: this.uid,
      machineIds: () => this.machineIds,
      runtime: rt,
      log: this.o.log,
      ...(o.sshBind !== undefined ? { sshBind: o.sshBind } : {}),
    });
    this.requests = new ClientRequests({
      runtime: rt,
      log: this.o.log,
      journal: this.journal,
      records: this.records,
      spec: (w) => this.spec(w),
      postResults: async (results) => {
        await this.client.results({ agent_uid: this.uid, machine_ids: this.machineIds, results });
      },
      poke: () => this.poke(),
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
          ...(this.o.runtime.volumes ? { volume_method: this.o.runtime.volumes.method } : {}),
          ...(publicHost !== undefined ? { public_host: publicHost } : {}),
          ...(this.o.priceGpu !== undefined ? { price_gpu: this.o.priceGpu } : {}),
          ...(this.o.priceDisk !== undefined ? { price_disk: this.o.priceDisk } : {}),
          ...(this.offerGenerations ? { config_generations: true } : {}),
          ...(this.o.location !== undefined ? { location: this.o.location } : {}),
          machines: this.o.machines,
        });
        this.machineIds = r.machines.map((m) => m.machine_id);
        this.verification = new Map(
          r.machines.flatMap((m) => (m.verification ? [[m.machine_id, m.verification] as const] : [])),
        );
        this.verificationRule = r.verification_rule;
        this.publicHost = publicHost;
        this.slotOf = new Map(r.machines.map((m) => [m.machine_id, m.slot]));
        this.heartbeatMs = (this.o.heartbeatS ?? r.heartbeat_s) * 1000;
        this.usageReports = r.usage_reports === true;
        this.configGenerations = r.config_generations === true;
        this.loopDelayReports = r.loop_delay_reports === true;
        this.startWaits = r.long_polls === true;
        if (r.benchmarks === true && this.o.benchmarks) this.scheduleBenchmarks(r.benchmark_interval_s);
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

  /** Runs the benchmarks now (after a registration) and then every `intervalS`. */
  private scheduleBenchmarks(intervalS: number | undefined): void {
    if (this.benchTimer) clearInterval(this.benchTimer);
    void this.runBenchmarks('registration');
    const ms = Math.min(Math.max(60, intervalS ?? 86400) * 1000, MAX_TIMER_MS);
    this.benchTimer = setInterval(() => void this.runBenchmarks('schedule'), ms);
    this.benchTimer.unref();
  }

  /** One benchmark run of every machine (none while another runs); failures are logged only. */
  runBenchmarks(trigger: string): Promise<void> {
    const b = this.o.benchmarks;
    if (!b || this.benchRun || this.stopped) return this.benchRun ?? Promise.resolve();
    const machines = this.machineIds.flatMap((id) => {
      const slot = this.slotOf.get(id);
      const hw = slot === undefined ? undefined : this.o.machines.find((m) => m.slot === slot);
      return hw ? [{ id, hw, devices: this.o.devices?.[hw.slot] ?? null, realGpus: b.realGpus }] : [];
    });
    const run = runBenchmarks(
      {
        stateDir: this.o.stateDir,
        version: this.o.version,
        netUpload: (n) => this.client.netUpload(n),
        netDownload: (n) => this.client.netDownload(n),
        post: (body) => this.client.benchmarks(body),
        ...(b.gpus ? { gpus: b.gpus } : {}),
        ...(b.host ? { host: b.host } : {}),
      },
      this.uid,
      machines,
      trigger,
    )
      .then((replies) => {
        replies.forEach((r, i) => {
          const id = machines[i]!.id;
          if (r instanceof Error) this.o.log.warn(`benchmarks of machine ${id} not posted: ${r.message}`);
          else {
            this.verification.set(id, r.verification);
            this.o.log.info(
              `benchmarks of machine ${id} (${trigger}): ${r.verification}; ${r.verification_reason}`,
            );
          }
        });
      })
      .catch((err: unknown) => this.o.log.warn(`benchmarks failed: ${(err as Error).message}`))
      .finally(() => {
        this.benchRun = null;
      });
    this.benchRun = run;
    return run;
  }

  /** A step of a start or recycle under way (pull progress), reported in the next sync. */
  setProgress(id: number, step: string): void {
    const op = this.records.get(id).op?.op;
    const msg =
      op === 'recycle' && !step.startsWith('recycling')
        ? `recycling: ${step}`
        : op === 'recreate' && !step.startsWith('updating')
          ? `updating: ${step}`
          : step;
    const was = this.records.get(id).progress;
    this.records.set(id, { progress: msg });
    // A new step is worth an early sync; byte counts ride along with the next heartbeat.
    if (was === undefined || was.replace(/:.*$/, '') !== msg.replace(/:.*$/, '')) this.poke();
  }

  /** Wakes the loop for an early sync (a local change to report). */
  poke(): void {
    // A poke during a sync (no one waits yet) must not be lost: the loop syncs again at once.
    if (this.wake) this.wake();
    else this.poked = true;
  }

  /** A sync now (the server woke the agent); resolves once one that began after the call is done. */
  private syncNow(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      this.syncWaiters.push(resolve);
      this.poke();
    });
  }

  /** (Re)starts the long poll, after the first sync that followed a registration saying `long_polls`. */
  private startWaitLoop(): void {
    this.startWaits = false;
    void this.waits?.stop();
    this.waits = new WaitLoop({
      client: this.client,
      uid: this.uid,
      log: this.o.log,
      machineIds: () => this.machineIds,
      lastRequestId: () => this.lastRequestId,
      // A wake may be a serving process asking for a gateway tunnel: claimed beside the sync.
      syncNow: () => {
        void this.tunnels.poll();
        return this.syncNow();
      },
    });
    this.waits.start();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.poked = false;
      const waiting = this.syncWaiters.splice(0);
      try {
        await this.syncOnce();
        if (this.startWaits && !this.stopped) this.startWaitLoop();
      } catch (err) {
        if (err instanceof AgentFatalError) {
          this.o.log.error(`the server refused the agent: ${err.message}`);
          this.stopped = true;
          process.exitCode = 1;
          void this.waits?.stop();
          break;
        }
        this.o.log.warn(`sync failed (will retry): ${(err as Error).message}`);
      } finally {
        for (const f of waiting) f();
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
    for (const f of this.syncWaiters.splice(0)) f();
  }

  private reports(): Promise<InstanceReport[]> {
    return instanceReports({
      runtime: this.o.runtime,
      records: this.records,
      usage: this.usage,
      holds: (id) => this.operations.holds(id),
      measured: this.usageReports ? (r) => this.measured(r) : null,
      generations: this.configGenerations,
    });
  }

  /**
   * The latest figures of an instance for its report: its disk once measured, and the mean
   * utilisation of its machine's GPUs while it runs (null otherwise, and with simulated GPUs).
   */
  private measured(r: InstanceReport): Pick<InstanceReport, 'disk_usage_bytes' | 'gpu_util'> {
    const disk = this.usage.disk(r.id);
    const machine = this.records.get(r.id).machineId;
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
      .filter((r) => r.state === 'loading' && this.records.get(r.id).announceLoading)
      .map((r) => r.id);
    const instances = reports.map((r) =>
      r.status_msg && r.status_msg.length > 500 ? { ...r, status_msg: r.status_msg.slice(0, 500) } : r,
    );
    let res: SyncResponse;
    try {
      const delay = this.loopDelayReports ? this.o.loopDelay?.() : undefined;
      res = await this.client.sync({
        agent_uid: this.uid,
        machine_ids: this.machineIds,
        instances,
        ...(delay ? { event_loop_delay_ms: delay } : {}),
      });
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
    this.records.clearMachines();
    for (const w of res.instances)
      if (w.machine_id !== 0) this.records.set(w.id, { machineId: w.machine_id });
    if (this.o.heartbeatS === undefined) this.heartbeatMs = res.heartbeat_s * 1000;
    for (const r of res.requests ?? []) this.lastRequestId = Math.max(this.lastRequestId, r.id);
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
    for (const id of announced) this.records.set(id, { announceLoading: false });
    await this.operations.reconcileAll(res.instances, unknown.length === 0);
    // Volumes the server no longer lists were deleted by their owners: their data goes (volumes.ts).
    if (res.volumes) await this.o.runtime.volumes?.reconcile(res.volumes);
    for (const r of res.requests ?? []) this.requests.handle(r, res.instances);
    if (this.copiesServed)
      await this.copies.sync().catch((err: Error) => {
        // An older server has no copies: asked no more until the agent restarts.
        if (err instanceof AgentHttpError && err.status === 404) this.copiesServed = false;
        else this.o.log.warn(`copies: ${err.message}`);
      });
    if (this.machineIds.length === 0 && this.deletedMachines.size > 0 && this.records.ops().length === 0) {
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
      volumes: w.volumes?.map((v) => ({ id: v.id, mountPath: v.mount_path, sizeGb: v.size_gb })),
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
   * A clean stop: finishes running operations, tells the server (its machines go offline at once)
   * and, when asked (the demo), stops the instances' processes too; otherwise they keep running
   * and a restarted agent re-adopts them.
   */
  async shutdown(opts: { stopInstances?: boolean; notify?: boolean } = {}): Promise<void> {
    this.stopped = true;
    if (this.benchTimer) clearInterval(this.benchTimer);
    this.poke();
    void this.waits?.stop();
    this.tunnels.stop();
    this.copies.stop();
    await Promise.race([Promise.all(this.records.ops().map((o) => o.done)), sleep(10_000)]);
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
