// Moving instances, for the agent gateway and the heartbeat sweeps. Every move is a
// conditional UPDATE … WHERE actual_status = <expected>, decided by the database: two reports
// racing for one instance can't both apply. Each move settles billing first, at the rates of the
// state being left (billing.service settleInstance), so compute is charged exactly while running.
// Signatures here are a contract with the agent gateway: keep them stable.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Store } from '../../db/connection.js';
import {
  applyAgentReport,
  applySweep,
  type ActualStatus,
  type AgentDecision,
  type ReportedStatus,
  type SweepStatus,
} from '../../../contract/instance-states.js';
import { settleInstance, statusOf } from '../billing/billing.service.js';
import { LostRace, txRetry } from '../../db/tx.js';
import { instanceEvent, recordEvent } from '../webhooks/webhooks.events.js';
import * as repo from './instances.repo.js';

type StoreDeps = { store: Store; clock: { now(): number } };

/** Port map as the clients read it: {"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": "41022"}]}. */
export type PortMap = Record<string, { HostIp: string; HostPort: string }[]>;

export interface StatusFields {
  ssh_host?: string | null;
  ssh_port?: number | null;
  ports?: PortMap;
  status_msg?: string;
  /** What the agent measured (bytes of disk, GPU percent), written with the rest. */
  disk_usage_bytes?: number | null;
  gpu_util?: number | null;
}

function fieldsToSet(f: StatusFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (f.ssh_host !== undefined) out.ssh_host = f.ssh_host;
  if (f.ssh_port !== undefined) out.ssh_port = f.ssh_port;
  if (f.ports !== undefined) out.ports = JSON.stringify(f.ports);
  if (f.status_msg !== undefined) out.status_msg = f.status_msg.slice(0, 1000);
  if (f.disk_usage_bytes !== undefined) out.disk_usage_bytes = f.disk_usage_bytes;
  if (f.gpu_util !== undefined) out.gpu_util = f.gpu_util;
  return out;
}

/**
 * Moves instance `id` from `expected` to `next` (and sets `fields`), only if it is still live and
 * in `expected`; settles its billing up to now first. Returns false when the row was not in
 * `expected` (someone else moved it, or it was destroyed): nothing changed then.
 */
export async function setActualStatus(
  deps: StoreDeps,
  id: number,
  expected: ActualStatus,
  next: ActualStatus,
  fields: StatusFields = {},
): Promise<boolean> {
  const now = deps.clock.now();
  return txRetry(deps.store, async (trx) => {
    const row = await repo.instanceRow(trx, id);
    if (!row || row.destroyed_at !== null || row.actual_status !== expected) return false;
    await settleInstance(trx, row, now);
    const moved = await repo.moveInstance(
      trx,
      id,
      { actual: expected },
      // Entering `running` starts the uptime the rows show; it is read only while running.
      {
        ...fieldsToSet(fields),
        actual_status: next,
        ...(next === 'running' && expected !== 'running' ? { running_since: now } : {}),
      },
    );
    if (!moved) throw new LostRace(`status of instance ${id}`);
    await recordEvent(
      trx,
      now,
      instanceEvent(row, expected, next, {
        intended_status: row.intended_status,
        status_msg: fields.status_msg?.slice(0, 1000) ?? row.status_msg,
      }),
    );
    return true;
  });
}

/**
 * Updates connection fields (ssh_host, ports, status_msg) without a status change; with `actual`,
 * only while the instance is still in that status (a progress message never lands on a row that
 * a client's stop moved meanwhile).
 */
export async function setInstanceFields(
  db: Kysely<DB>,
  id: number,
  fields: StatusFields,
  from: { actual?: ActualStatus } = {},
): Promise<boolean> {
  const set = fieldsToSet(fields);
  if (Object.keys(set).length === 0) return true;
  return repo.moveInstance(db, id, from, set);
}

/**
 * An agent reports the status of an instance it runs: decided by the state machine
 * (applyAgentReport), written with setActualStatus. Returns the decision ('reject' with a reason
 * for the agent's log when the report contradicts the machine; 'noop' when it already holds).
 */
export async function reportInstanceStatus(
  deps: StoreDeps,
  id: number,
  reported: ReportedStatus,
  fields: StatusFields = {},
): Promise<AgentDecision> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const row = await repo.instanceStatus(deps.store.db, id);
    if (!row || row.destroyed_at !== null)
      return { kind: 'reject', reason: `instance ${id} does not exist or was destroyed` };
    const s = statusOf(row);
    const d = applyAgentReport(s, reported);
    if (d.kind === 'noop') {
      await setInstanceFields(deps.store.db, id, fields);
      return d;
    }
    if (d.kind === 'reject') return d;
    if (await setActualStatus(deps, id, s.actual, d.next, fields)) return d;
    // The status changed under us (a client stop, a sweep): decide again on the new state.
  }
  return { kind: 'reject', reason: `instance ${id} kept changing; report again` };
}

/**
 * Heartbeat sweeps: marks the live instances of a machine `unknown` or `offline` (state machine
 * applySweep). Returns the ids that moved.
 */
export async function sweepMachineInstances(
  deps: StoreDeps,
  machineId: number,
  to: SweepStatus,
): Promise<number[]> {
  const rows = await repo.liveInstancesOn(deps.store.db, machineId);
  const moved: number[] = [];
  for (const r of rows) {
    const s = statusOf(r);
    const d = applySweep(s, to);
    if (d.kind === 'apply' && (await setActualStatus(deps, r.id, s.actual, d.next))) moved.push(r.id);
  }
  return moved;
}

export interface AgentInstanceView {
  id: number;
  machine_id: number;
  user_id: number;
  image: string;
  disk: number;
  onstart: string;
  env: Record<string, string>;
  runtype: string;
  args: string[] | null;
  actual_status: ActualStatus;
  intended_status: 'running' | 'stopped';
  ports: PortMap;
}

/** The live instances the agent of a machine must run (or keep stopped). */
export async function instancesForMachine(db: Kysely<DB>, machineId: number): Promise<AgentInstanceView[]> {
  const rows = await repo.liveInstancesOn(db, machineId);
  return rows.map((r) => {
    const s = statusOf(r);
    return {
      id: r.id,
      machine_id: r.machine_id,
      user_id: r.user_id,
      image: r.image,
      disk: r.disk,
      onstart: r.onstart,
      env: JSON.parse(r.env) as Record<string, string>,
      runtype: r.runtype,
      args: r.args === null ? null : (JSON.parse(r.args) as string[]),
      actual_status: s.actual,
      intended_status: s.intended,
      ports: JSON.parse(r.ports) as PortMap,
    };
  });
}

/** The OpenSSH public key lines the container of an instance accepts (its authorized_keys). */
export function authorizedKeysFor(db: Kysely<DB>, instanceId: number): Promise<string[]> {
  return repo.authorizedKeys(db, instanceId);
}
