// Heartbeat timestamps, written in batches (many thousands of machines heartbeating every
// 10 s while clients poll). A heartbeat of a machine that is already online changes nothing but
// `last_heartbeat_at`; writing it at once cost a durable commit (an fsync on SQLite) per agent
// sync, 2,000 a second at that scale, each holding up the requests behind it. So:
// - which machines are the agent's own is read at once (the sync answers from it);
// - a machine that is not `online` is written at once (the transition, as before);
// - an online machine's new timestamp waits in memory and every pending one is written by one
//   statement per flush interval (a quarter of the heartbeat interval, at most 1 s), and before
//   this process's own sweep judges heartbeats, and when the app closes.
// A timestamp only moves forward and only on an online, live machine, so a flush racing another
// process's sweep never brings an offline machine back (its next heartbeat does, as a transition).
// A crash loses at most one interval of timestamps: the sweep thresholds are many intervals long.
import type { Deps } from '../../deps.types.js';
import * as repo from './agent-gateway.repo.js';
import { tx } from '../../db/connection.js';
import { machineEvent, recordEvents } from '../webhooks/webhooks.events.js';
import { chunksWithTurns } from '../../db/chunks.js';

// The machines whose heartbeats stopped, for the heartbeat sweep (jobs/heartbeat-sweep.ts) and the
// demo's shutdown, through this file rather than the module's repo.
export {
  quietMachinesWithInstances,
  setMachinesOffline,
  sweepMachinesOffline,
} from './agent-gateway.repo.js';

/** Heartbeat times not yet written, of one process (deps.ts `heartbeats`). */
export class HeartbeatBuffer {
  readonly times = new Map<number, number>();
  timer: NodeJS.Timeout | null = null;
  flushing: Promise<void> = Promise.resolve();
}

// Rows per statement: on SQLite a statement runs synchronously (about 30 µs a row with its index
// and trigger upkeep), so a flush is cut into statements of a few milliseconds each, with a turn
// of the event loop between them for the requests waiting.
const CHUNK = 500;

/**
 * Records a heartbeat of the agent's machines among `ids`; returns those that are its own and now
 * online, with the address their instances are reached at.
 */
export async function heartbeat(
  deps: Pick<Deps, 'store' | 'db' | 'config' | 'log' | 'heartbeats'>,
  hostId: number,
  agentUid: string,
  ids: number[],
  now: number,
): Promise<{ id: number; public_host: string | null }[]> {
  if (ids.length === 0) return [];
  const rows = await repo.ownMachines(deps.store, hostId, agentUid, ids);
  const transitions = rows.filter((r) => r.online_state !== 'online').map((r) => r.id);
  // A machine coming back is reported (machine.online) in the transaction that moves it.
  const written =
    transitions.length > 0
      ? new Set(
          await tx(deps.store, async (trx) => {
            const came = await repo.touchMachines(trx, hostId, agentUid, transitions, now, {
              onlyOffline: true,
            });
            await recordEvents(
              trx,
              now,
              came.map((id) => machineEvent(hostId, id, 'online')),
            );
            // Those a racing heartbeat brought online meanwhile get this one's time; the rest
            // were just written.
            const moved = new Set(came);
            const others = transitions.filter((id) => !moved.has(id));
            return [...came, ...(await repo.touchMachines(trx, hostId, agentUid, others, now))];
          }),
        )
      : new Set<number>();
  const p = deps.heartbeats;
  for (const r of rows) if (r.online_state === 'online') p.times.set(r.id, now);
  if (p.times.size > 0 && !p.timer) {
    const ms = Math.min(1000, (deps.config.agent.heartbeatS * 1000) / 4);
    p.timer = setTimeout(() => {
      p.timer = null;
      flushHeartbeats(deps).catch((err: unknown) =>
        deps.log.warn({ err }, 'writing heartbeats failed; retrying'),
      );
    }, ms);
    p.timer.unref();
  }
  return rows
    .filter((r) => r.online_state === 'online' || written.has(r.id))
    .map((r) => ({ id: r.id, public_host: r.public_host }));
}

/** Writes every pending heartbeat now (one statement per 500 machines). */
export function flushHeartbeats(deps: Pick<Deps, 'store' | 'db' | 'heartbeats'>): Promise<void> {
  const p = deps.heartbeats;
  // One flush at a time: a second caller waits for the running one, then writes what came since.
  p.flushing = p.flushing.then(async () => {
    if (p.times.size === 0) return;
    const batch = [...p.times];
    p.times.clear();
    try {
      for await (const part of chunksWithTurns(batch, CHUNK)) {
        await deps.db.executeQuery(repo.writeTimes(deps.store.dialect, part));
      }
    } catch (err) {
      // Not lost: back in the queue (unless a newer heartbeat of the machine came meanwhile).
      for (const [id, t] of batch) if ((p.times.get(id) ?? 0) < t) p.times.set(id, t);
      throw err;
    }
  });
  const mine = p.flushing;
  p.flushing = mine.catch(() => {});
  return mine;
}
