// What the agent tells the server about each instance at a sync: what it really is here (from
// the runtime), or what this agent is doing with it (an operation under way, a start that
// failed), with the configuration generation the report describes.
import type { InstanceReport } from '../contract/agent-protocol.js';
import type { InstanceRecords } from './instance-records.js';
import { generationOf, type ObservedState, type Runtime } from './runtime.js';
import type { UsageMeter } from './usage.js';

export interface ReportSources {
  readonly runtime: Runtime;
  readonly records: InstanceRecords;
  readonly usage: UsageMeter;
  /** Notes that the host has an instance (seen here). */
  holds(id: number): void;
  /** The figures to add to a report (disk, GPU utilisation); null when the server takes none. */
  measured: ((r: InstanceReport) => Pick<InstanceReport, 'disk_usage_bytes' | 'gpu_util'>) | null;
  /** The server takes configuration generations in reports. */
  generations: boolean;
}

/** One report per instance that is here, under way or failed, in id order. */
export async function instanceReports(src: ReportSources): Promise<InstanceReport[]> {
  const { runtime, records } = src;
  const ids = new Set([
    ...(await runtime.list()),
    ...records.ids((r) => r.op !== undefined),
    ...records.ids((r) => r.failure !== undefined),
  ]);
  const out: InstanceReport[] = [];
  const seen = new Map<number, ObservedState>();
  for (const id of [...ids].sort((a, b) => a - b)) {
    const rec = records.get(id);
    if (rec.announceLoading) {
      out.push({ id, state: 'loading', status_msg: rec.progress ?? 'preparing the instance' });
      continue;
    }
    if (rec.failure) {
      out.push({ id, state: 'exited', status_msg: rec.failure });
      continue;
    }
    const op = rec.op;
    // An update under way: loading, or stopped for a stopped instance (replaced, not started).
    if (op?.op === 'recreate') {
      const step = rec.progress ?? 'updating: recreating the container';
      out.push({ id, state: op.start ? 'loading' : 'stopped', status_msg: step });
      continue;
    }
    // A reboot or recycle under way: loading (the server holds `running` until it is done).
    if (op?.op === 'reboot' || op?.op === 'recycle') {
      out.push({ id, state: 'loading', status_msg: rec.progress ?? `${op.op} under way` });
      continue;
    }
    const st = await runtime.inspect(id);
    seen.set(id, st);
    if (st.state !== 'absent') src.holds(id);
    if (op?.op === 'start' && st.state !== 'exited') {
      // Read again: the record may have changed while the runtime answered.
      out.push({ id, state: 'loading', status_msg: records.get(id).progress ?? 'preparing the instance' });
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
  src.usage.retain(ids);
  if (src.measured) for (const r of out) Object.assign(r, src.measured(r));
  if (src.generations) {
    for (const r of out) {
      const g = reportedGeneration(records, r.id, seen.get(r.id));
      if (g !== undefined) r.generation = g;
    }
  }
  return out;
}

/** The generation an instance's report describes: what is being made, what failed, or what is here. */
function reportedGeneration(
  records: InstanceRecords,
  id: number,
  st: ObservedState | undefined,
): number | undefined {
  const rec = records.get(id);
  const op = rec.op;
  if (rec.announceLoading || rec.failure !== undefined) return rec.generation;
  if (op?.op === 'recreate' || op?.op === 'recycle' || op?.op === 'reboot') return op.generation;
  if (op?.op === 'start' && st?.state !== 'exited') return rec.generation;
  return st && st.state !== 'absent' ? generationOf(st) : undefined;
}
