// The heartbeat sweeps (thresholds in .env.example):
// - no heartbeat for OPENRIG_UNKNOWN_AFTER_S: the machine's live instances become `unknown`;
// - no heartbeat for OPENRIG_OFFLINE_AFTER_S: the machine and its instances become `offline`.
// Safe with several `serve` processes on one database: every write is conditional on the state it
// moves from (machines: online_state = 'online'; instances: setActualStatus on the expected
// actual_status), so two sweeps racing make the same change once and never undo a newer one.
// Machines that never heartbeated (admin create-machines, no agent) are left alone.
import type { Deps } from '../deps.types.js';
import { every, type Job } from './every.js';
import { sweepMachineInstances } from '../modules/instances/instances.moves.js';
import {
  flushHeartbeats,
  quietMachinesWithInstances,
  sweepMachinesOffline,
} from '../modules/agent-gateway/agent-gateway.heartbeats.js';
import { nextTurn } from '../clock.js';
import { tx } from '../db/connection.js';
import { machineEvent, recordEvents } from '../modules/webhooks/webhooks.events.js';

export interface SweepResult {
  unknown: number[];
  offline: number[];
  machinesOffline: number;
}

export async function sweepHeartbeats(
  deps: Pick<Deps, 'store' | 'db' | 'clock' | 'config' | 'heartbeats'>,
): Promise<SweepResult> {
  const now = deps.clock.now();
  const { unknownAfterS, offlineAfterS } = deps.config.agent;
  const offlineBefore = now - offlineAfterS * 1000;
  const unknownBefore = now - unknownAfterS * 1000;
  const out: SweepResult = { unknown: [], offline: [], machinesOffline: 0 };
  // This process's heartbeats still in memory count: write them before judging.
  await flushHeartbeats(deps);
  // Offline first: a machine past both thresholds goes straight to offline.
  // Machines going offline are reported (machine.offline) in the transaction that moves them.
  out.machinesOffline = await tx(deps.store, async (trx) => {
    const went = await sweepMachinesOffline(trx, offlineBefore);
    await recordEvents(
      trx,
      now,
      went.map((m) => machineEvent(m.host_id, m.id, 'offline')),
    );
    return went.length;
  });
  for (const id of await quietMachinesWithInstances(deps.db, offlineBefore, 'offline')) {
    out.offline.push(...(await sweepMachineInstances(deps, id, 'offline')));
    await nextTurn();
  }
  for (const id of await quietMachinesWithInstances(deps.db, unknownBefore, 'unknown')) {
    out.unknown.push(...(await sweepMachineInstances(deps, id, 'unknown')));
    await nextTurn();
  }
  return out;
}

export function startHeartbeatSweep(deps: Deps, onError: (err: unknown) => void): Job {
  // Grace after start: while this server was down, agents could not heartbeat to it. A restart
  // must not turn every instance `unknown`; agents get OPENRIG_UNKNOWN_AFTER_S to reach it first.
  // (Other `serve` processes that stayed up keep sweeping meanwhile.)
  const sweepFrom = deps.clock.now() + deps.config.agent.unknownAfterS * 1000;
  return every(
    'heartbeat-sweep',
    deps.config.agent.sweepIntervalMs,
    async () => {
      if (deps.clock.now() < sweepFrom || deps.agentGateway.closed) return;
      const r = await sweepHeartbeats(deps);
      if (r.unknown.length || r.offline.length || r.machinesOffline) {
        deps.log.warn(
          { unknown: r.unknown, offline: r.offline, machines_offline: r.machinesOffline },
          'heartbeats lapsed',
        );
      }
    },
    onError,
  );
}
