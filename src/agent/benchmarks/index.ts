// The agent's open benchmarks (docs/benchmarks.md): run after each registration (so after any
// hardware change, which the agent finds when it starts) and every `benchmark_interval_s` the
// server gives, when the server says it takes them. One run measures the host once (CPU, memory,
// disk, network to the server: a worker thread and I/O, off the event loop) and each machine's
// GPUs (its share of them: child processes), and posts one report per machine.
import os from 'node:os';
import type { AgentMachineHardware } from '../../contract/agent-protocol.js';
import type { BenchmarkReply, BenchmarkReport, GpuBenchmark } from '../../contract/benchmarks.js';
import { benchmarkGpus } from './nvidia.js';
import { hostFacts, measureHost } from './host.js';

/** The bytes moved each way to time the network (2 MB). */
export const NET_BYTES = 2 * 1024 * 1024;

export interface BenchmarkDeps {
  stateDir: string;
  version: string;
  /** Seconds an upload / a download of `bytes` took (AgentClient). */
  netUpload(bytes: number): Promise<number>;
  netDownload(bytes: number): Promise<number>;
  post(body: BenchmarkReport): Promise<BenchmarkReply>;
  /** The GPU part for a device list (null: all; absent: simulated GPUs, which have none to measure). */
  gpus?: (devices: string | null) => Promise<GpuBenchmark>;
  /** The host part (default: measureHost in the state directory). */
  host?: typeof measureHost;
}

/** Mbps of `bytes` in `seconds`; 0 when the measurement failed. */
const mbps = (bytes: number, seconds: number) =>
  seconds > 0 ? Math.round((bytes * 8) / seconds / 1e4) / 100 : 0;

/**
 * One run: measures and posts a report for each machine (`devices[i]` is machine i's GPUs; a
 * null device list with real GPUs means all of them). Resolves with each machine's reply, or
 * the error that stopped its post.
 */
export async function runBenchmarks(
  d: BenchmarkDeps,
  agentUid: string,
  machines: { id: number; hw: AgentMachineHardware; devices: string | null; realGpus: boolean }[],
  trigger: string,
): Promise<(BenchmarkReply | Error)[]> {
  const t0 = performance.now();
  const [facts, host] = await Promise.all([hostFacts(), (d.host ?? measureHost)(d.stateDir)]);
  const up = await d.netUpload(NET_BYTES).catch(() => 0);
  const down = await d.netDownload(NET_BYTES).catch(() => 0);
  const cpus = os.cpus();
  const out: (BenchmarkReply | Error)[] = [];
  for (const m of machines) {
    const gpu: GpuBenchmark = m.realGpus
      ? await (d.gpus ?? benchmarkGpus)(m.devices)
      : { error: `no NVIDIA GPU: the agent simulates ${m.hw.num_gpus}x ${m.hw.gpu_name} (--gpus)` };
    const body: BenchmarkReport = {
      agent_uid: agentUid,
      machine_id: m.id,
      version: d.version,
      trigger,
      cpu: {
        name: m.hw.cpu_name || (cpus[0]?.model ?? '').trim(),
        arch: facts.arch,
        cores: m.hw.cpu_cores,
        ghz: facts.ghz,
        score: host.cpu_score,
        has_avx: facts.has_avx,
      },
      mem_bw: host.mem_bw,
      disk_bw: host.disk_bw,
      inet_up: mbps(NET_BYTES, up),
      inet_down: mbps(NET_BYTES, down),
      system: { ubuntu_version: facts.ubuntu_version, mobo_name: facts.mobo_name },
      gpu,
      seconds: Math.round(performance.now() - t0) / 1000,
    };
    out.push(
      await d.post(body).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))),
    );
  }
  return out;
}
