// The agent protocol's server side: register, sync (heartbeat + reconcile), shutdown.
// Reports are decided by the pure instance state machine (contract/instance-states.ts) and
// written conditionally (agent-gateway.repo.ts).
import type { Deps } from '../../deps.types.js';
import { tx } from '../../db/connection.js';
import type { AuthContext } from '../../identity.js';
import { INSTANCE_KEY_PREFIX } from '../../identity.js';
import { decryptSecret, encryptSecret, newToken, sha256Hex } from '../../crypto.js';
import {
  reportInstanceStatus,
  setInstanceFields,
  authorizedKeysFor,
  sweepMachineInstances,
  type StatusFields,
} from '../instances/instances.moves.js';
import type {
  AgentRequest,
  AuthorizedKeysRequest,
  AuthorizedKeysResponse,
  ResultsRequest,
  DesiredInstance,
  InstanceReport,
  RegisterRequest,
  RegisterResponse,
  ShutdownRequest,
  SyncRequest,
  SyncResponse,
} from '../../../contract/agent-protocol.js';
import { AgentErrors } from './agent-gateway.errors.js';
import * as repo from './agent-gateway.repo.js';
import { heartbeat } from './agent-gateway.heartbeats.js';
import { launchOf } from './agent-gateway.launch.js';
import { machineEvent, recordEvents } from '../webhooks/webhooks.events.js';
import { launchAccountEnv } from '../env-vars/env-vars.service.js';
import { agentVolumes } from '../volumes/volumes.service.js';
import { interpretReport } from '../../../contract/instance-report.js';
import type { AgentDecision } from '../../../contract/instance-states.js';
import { recordUsageSamples } from '../usage-history/usage-history.service.js';
import {
  afterInstanceExit,
  afterRegistration,
  benchSettings,
  machineBeforeRegistration,
} from '../benchmarks/benchmarks.service.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function timing(deps: Deps) {
  const a = deps.config.agent;
  return { heartbeat_s: a.heartbeatS, unknown_after_s: a.unknownAfterS, offline_after_s: a.offlineAfterS };
}

/**
 * What this server takes beyond the first protocol, said in every register answer: an agent sends
 * the matching report fields only when told (a sync body with a field the server does not know is
 * refused), so a newer agent keeps working with an older server.
 */
const SERVER_CAPABILITIES = {
  usage_reports: true,
  config_generations: true,
  loop_delay_reports: true,
  long_polls: true,
  benchmarks: true,
} as const;

export async function register(
  deps: Deps,
  auth: AuthContext,
  body: RegisterRequest,
): Promise<RegisterResponse> {
  const slots = new Set(body.machines.map((m) => m.slot));
  if (slots.size !== body.machines.length) throw AgentErrors.duplicateSlot();
  const now = deps.clock.now();
  // All machines or none: a refused one rolls back the others.
  const out = await tx(deps.store, async (trx) => {
    const acc: RegisterResponse['machines'] = [];
    const deleted: RegisterResponse['machines'] = [];
    for (const m of body.machines) {
      const before = await machineBeforeRegistration(trx, auth.user.id, body.agent_uid, m.slot);
      const row = await repo.upsertMachine(
        trx,
        auth.user.id,
        body.agent_uid,
        m,
        {
          priceGpu: body.price_gpu,
          priceDisk: body.price_disk,
          publicHost: body.public_host,
          runtime: body.runtime,
          volumeMethod: body.volume_method,
          verified: deps.config.agent.autoVerify,
          configGenerations: body.config_generations === true,
          location: body.location,
        },
        now,
      );
      if (row) {
        // A changed machine is deverified; an unchanged one advertises no more than its last
        // benchmark saw (benchmarks.service.ts).
        const verification = await afterRegistration(
          { db: trx, now, rule: deps.config.agent.verificationRule },
          before,
          row.id,
        );
        acc.push({ slot: m.slot, machine_id: row.id, verification });
        continue;
      }
      // A machine the host deleted stays deleted, untouched: the agent is told so, and serves it
      // no more.
      const gone = await repo.deletedSlotMachine(trx, auth.user.id, body.agent_uid, m.slot);
      if (!gone) throw AgentErrors.agentUidTaken();
      deleted.push({ slot: m.slot, machine_id: gone.id });
    }
    return { machines: acc, deleted };
  });
  deps.log.info(
    {
      host: auth.user.id,
      machines: out.machines.map((m) => m.machine_id),
      ...(out.deleted.length > 0 ? { deleted: out.deleted.map((m) => m.machine_id) } : {}),
    },
    'agent registered',
  );
  return {
    success: true,
    machines: out.machines,
    deleted_machines: out.deleted,
    verification_rule: deps.config.agent.verificationRule,
    ...timing(deps),
    ...SERVER_CAPABILITIES,
    benchmark_interval_s: benchSettings(deps.config).intervalS,
  };
}

const PORT_KEY = /^-p\s+(?:\d{1,5}:)?(\d{1,5})(?:\/(tcp|udp))?$/;

/** The container ports an instance's env asks to publish ("-p 8080:8080": "1"). */
function portRequests(raw: string): { container: number; proto: 'tcp' | 'udp' }[] {
  let obj: unknown;
  try {
    obj = JSON.parse(raw);
  } catch {
    return [];
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return [];
  const out: { container: number; proto: 'tcp' | 'udp' }[] = [];
  for (const k of Object.keys(obj)) {
    const m = PORT_KEY.exec(k.trim());
    const port = m ? Number(m[1]) : 0;
    const proto = m?.[2] === 'udp' ? 'udp' : 'tcp';
    if (
      port >= 1 &&
      port <= 65535 &&
      port !== 22 &&
      !out.some((p) => p.container === port && p.proto === proto)
    )
      out.push({ container: port, proto });
  }
  return out;
}

function parseEnv(raw: string): Record<string, string> {
  let obj: unknown;
  try {
    obj = JSON.parse(raw);
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return out;
  // Port requests ("-p 8080:8080": "1") and other non-variable keys are not environment.
  for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
    if (ENV_NAME.test(k) && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'))
      out[k] = String(v);
  }
  return out;
}

/**
 * The instance_api_key for CONTAINER_API_KEY. The instances module seals it at creation
 * (instances.container_key_enc); for an instance created without it, one restricted key is
 * minted here and sealed once (first writer wins; a loser's key is deleted again).
 */
async function containerKey(
  deps: Deps,
  inst: { id: number; user_id: number; container_key_enc: string | null },
): Promise<string> {
  if (inst.container_key_enc) {
    const k = decryptSecret(deps.config.secretKey, inst.container_key_enc);
    if (k === null) throw AgentErrors.containerKeyUnreadable();
    return k;
  }
  const key = newToken(INSTANCE_KEY_PREFIX);
  const keyId = await repo.insertApiKey(deps.db, {
    user_id: inst.user_id,
    team_id: null,
    kind: 'instance',
    instance_id: inst.id,
    name: `instance ${inst.id} (container)`,
    key_hash: sha256Hex(key),
    key_prefix: key.slice(0, 10),
    permissions: null,
    created_at: deps.clock.now(),
  });
  if (await repo.sealContainerKeyOnce(deps.db, inst.id, encryptSecret(deps.config.secretKey, key)))
    return key;
  await repo.deleteApiKey(deps.db, keyId);
  const sealed = await repo.readContainerKey(deps.db, inst.id);
  const k = sealed ? decryptSecret(deps.config.secretKey, sealed) : null;
  if (k === null) throw AgentErrors.containerKeyUnreadable();
  return k;
}

/**
 * The keys this one instance accepts, each once: the account keys it was created with and the
 * keys attached to it since, minus detached and deleted ones. A key attached to another instance
 * of the same renter is not among them.
 */
async function authorizedKeys(deps: Deps, inst: { id: number; user_id: number }): Promise<string[]> {
  const all = await authorizedKeysFor(deps.db, inst.id);
  const seen = new Set<string>();
  return all.filter((k) => {
    const id = k.trim().split(/\s+/).slice(0, 2).join(' ');
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/**
 * The keys an instance accepts right now, from the same query the sync uses: the agent's SSH
 * server asks before it accepts a key, so a detached or deleted key stops working at once.
 */
export async function currentAuthorizedKeys(
  deps: Deps,
  auth: AuthContext,
  body: AuthorizedKeysRequest,
): Promise<AuthorizedKeysResponse> {
  const inst = await repo.hostLiveInstance(deps.db, auth.user.id, body.instance_id);
  return { authorized_keys: inst ? await authorizedKeys(deps, inst) : [] };
}

export async function sync(deps: Deps, auth: AuthContext, body: SyncRequest): Promise<SyncResponse> {
  const now = deps.clock.now();
  // The agent's own event-loop delay since its last sync: how long every renter on that host
  // waited for it (SSH, copies, logs, this heartbeat), kept as a histogram of the worst delays.
  if (body.event_loop_delay_ms) deps.metrics.agentLoopDelay.observe(body.event_loop_delay_ms.max / 1000);
  const requested = [...new Set(body.machine_ids)];
  const own = await heartbeat(deps, auth.user.id, body.agent_uid, requested, now);
  const mine = own.map((m) => m.id);
  const publicHost = new Map(own.map((m) => [m.id, m.public_host]));
  const unknown = requested.filter((id) => !mine.includes(id));
  // Of those, the machines its host deleted: refused for good (the agent drops them and logs
  // why; an agent that reads only unknown_machine_ids registers again and is told there). Only
  // a sync naming a machine that is not live pays for this read.
  const deleted = await repo.deletedAgentMachines(deps.db, auth.user.id, body.agent_uid, unknown);
  const reportedIds = body.instances.map((r) => r.id);
  const before = await repo.instancesForAgent(deps.db, mine, reportedIds);
  const byId = new Map(before.map((r) => [r.id, r]));
  // Read after the rows: a reboot or recycle moves its instance to `loading` in the transaction
  // that inserts its request, so a row read `loading` here has its request in this list.
  const pending = await repo.pendingRequests(
    deps.db,
    before.filter((r) => r.destroyed_at === null).map((r) => r.id),
    now,
  );
  const restarting = new Set(
    pending.filter((r) => r.kind === 'reboot' || r.kind === 'recycle').map((r) => r.instance_id),
  );

  let moved = false;
  // Measurements that differ from the row's and that no status write below carries: written
  // together after the loop, in one statement.
  const usage = new Map<number, repo.UsageWrite>();
  // 1. What the agent sees moves the instance, where the state machine allows it (the instances
  //    module decides with applyAgentReport, settles billing and writes conditionally).
  for (const rep of body.instances) {
    const row = byId.get(rep.id);
    if (!row || row.destroyed_at !== null) continue;
    const measured = changedUsage(rep, row);
    if (measured) usage.set(row.id, { id: row.id, ...measured });
    // What the report does to the row: contract/instance-report.ts states the rules.
    const outcome = interpretReport(row, rep, {
      sshHost: publicHost.get(row.machine_id) ?? deps.config.publicHost,
      restarting: restarting.has(row.id),
    });
    if (outcome.kind === 'ignore') continue;
    if (outcome.kind === 'step') {
      const fields = { status_msg: outcome.status_msg, ...measured };
      if (await setInstanceFields(deps.db, row.id, fields, { actual: 'loading' })) usage.delete(row.id);
      continue;
    }
    moved = true;
    let d: AgentDecision = { kind: 'noop' };
    for (const [i, m] of outcome.moves.entries()) {
      // The measurements go with the report's own move (the last).
      const last = i === outcome.moves.length - 1;
      const fields: StatusFields = { status_msg: m.status_msg, ...(last ? measured : null) };
      if (m.ssh) Object.assign(fields, { ssh_host: m.ssh.host, ssh_port: m.ssh.port, ports: m.ssh.ports });
      d = await reportInstanceStatus(deps, row.id, m.to, fields);
      if (d.kind === 'reject') break;
    }
    if (d.kind === 'reject') deps.log.debug({ instance: rep.id, reason: d.reason }, 'agent report ignored');
    else usage.delete(row.id); // written with the status
    // An exit may be the last of repeated failed starts, which deverify a verified machine.
    if (d.kind === 'apply' && d.next === 'exited') await afterInstanceExit(deps, row.machine_id);
  }
  await repo.writeUsage(deps.db, mine, [...usage.values()]);
  await recordUsageSamples(deps, now, body.instances, byId);
  const changedStates = body.instances.filter((r) => byId.get(r.id)?.agent_state !== r.state);
  await repo.recordAgentState(deps.db, mine, changedStates, now);

  // 2. What the agent should hold, read after the reports moved it (never a stale state). The
  //    usual heartbeat moved nothing: the first read stands (no second query per sync).
  const rows =
    moved || changedStates.length > 0 ? await repo.instancesForAgent(deps.db, mine, reportedIds) : before;
  const reported = new Set(reportedIds);
  const instances: DesiredInstance[] = [];
  for (const r of rows) {
    const destroyed = r.destroyed_at !== null;
    if (destroyed && !reported.has(r.id)) continue;
    instances.push({
      id: r.id,
      machine_id: r.machine_id,
      desired: destroyed ? 'destroyed' : r.intended_status === 'stopped' ? 'stopped' : 'running',
      actual_status: r.actual_status,
      image: r.image,
      disk: r.disk,
      onstart: destroyed ? '' : r.onstart,
      // The account's variables (copied at create) under the instance's own env, which wins.
      env: destroyed
        ? {}
        : { ...launchAccountEnv(deps.config.secretKey, r.id, r.account_env_enc), ...parseEnv(r.env) },
      label: r.label,
      container_api_key: destroyed ? null : await containerKey(deps, r),
      authorized_keys: destroyed ? [] : await authorizedKeys(deps, r),
      ports: destroyed ? [] : portRequests(r.env),
      image_login:
        destroyed || !r.image_login_enc ? null : decryptSecret(deps.config.secretKey, r.image_login_enc),
      ...(destroyed ? {} : launchOf(r.runtype, r.args, r.onstart)),
      ...(destroyed ? {} : { generation: r.config_generation }),
      // A preempted instance: the rest of its grace period (the market, instances.market.ts).
      ...(!destroyed && r.intended_status === 'stopped' && r.preempt_until !== null && r.preempt_until > now
        ? { stop_grace_s: Math.ceil((r.preempt_until - now) / 1000) }
        : {}),
    });
  }
  // Reported instances the server has no live row for on this agent's machines: remove them.
  for (const id of reported) {
    if (!byId.has(id)) {
      instances.push({
        id,
        machine_id: 0,
        desired: 'destroyed',
        actual_status: null,
        image: '',
        disk: 0,
        onstart: '',
        env: {},
        label: '',
        container_api_key: null,
        authorized_keys: [],
      });
    }
  }
  // The volumes of the agent's machines: those each live instance mounts, and the whole list (a
  // volume the agent holds that is not in it was deleted). One query.
  const volumes = await agentVolumes(deps.db, mine);
  for (const i of instances) {
    const v = i.desired === 'destroyed' ? undefined : volumes.byInstance.get(i.id);
    if (v) i.volumes = v;
  }
  const requests: AgentRequest[] = pending.map((r) => {
    const args = JSON.parse(r.args) as Pick<AgentRequest, 'tail' | 'filter' | 'daemon' | 'argv'>;
    return { id: r.id, instance_id: r.instance_id, kind: r.kind, ...args };
  });
  return {
    success: true,
    heartbeat_s: deps.config.agent.heartbeatS,
    unknown_machine_ids: unknown,
    deleted_machine_ids: deleted,
    instances,
    requests,
    server_time: now / 1000,
    volumes: volumes.list,
  };
}

/**
 * The measurements of a report that differ from what the row holds; null when none does (the
 * usual heartbeat between two measurements). A field the report leaves out is not a change.
 */
function changedUsage(
  rep: InstanceReport,
  row: { disk_usage_bytes: number | null; gpu_util: number | null },
): Omit<repo.UsageWrite, 'id'> | null {
  const out: Omit<repo.UsageWrite, 'id'> = {};
  if (rep.disk_usage_bytes !== undefined && rep.disk_usage_bytes !== row.disk_usage_bytes)
    out.disk_usage_bytes = rep.disk_usage_bytes;
  if (rep.gpu_util !== undefined && rep.gpu_util !== row.gpu_util) out.gpu_util = rep.gpu_util;
  return Object.keys(out).length > 0 ? out : null;
}

/** The agent's answers to client requests (the output of logs and command, kept for the client). */
export async function results(
  deps: Deps,
  auth: AuthContext,
  body: ResultsRequest,
): Promise<{ success: boolean; accepted: number }> {
  const now = deps.clock.now();
  const mine = await repo.ownMachines(deps.store, auth.user.id, body.agent_uid, [
    ...new Set(body.machine_ids),
  ]);
  const ids = mine.map((m) => m.id);
  let accepted = 0;
  for (const r of body.results) {
    const text = r.ok ? r.output : `error: ${r.output}\n`;
    if (await repo.completeRequest(deps.db, ids, { id: r.id, result: text }, now)) accepted++;
  }
  return { success: true, accepted };
}

export async function shutdown(
  deps: Deps,
  auth: AuthContext,
  body: ShutdownRequest,
): Promise<{ success: boolean; machines_offline: number; instances_offline: number }> {
  const wanted = [...new Set(body.machine_ids)];
  // The machines that were online are reported (machine.offline) in the transaction that moves them.
  const ids = await tx(deps.store, async (trx) => {
    const went = await repo.setMachinesOffline(trx, auth.user.id, body.agent_uid, wanted, {
      onlyOnline: true,
    });
    await recordEvents(
      trx,
      deps.clock.now(),
      went.map((id) => machineEvent(auth.user.id, id, 'offline')),
    );
    return repo.setMachinesOffline(trx, auth.user.id, body.agent_uid, wanted);
  });
  let n = 0;
  for (const id of ids) n += (await sweepMachineInstances(deps, id, 'offline')).length;
  deps.log.info({ host: auth.user.id, machines: ids, instances: n }, 'agent shut down: machines offline');
  return { success: true, machines_offline: ids.length, instances_offline: n };
}
