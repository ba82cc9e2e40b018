// Billing: settling instances into the ledger and the user's balance, the meter run, balances.
// Race safety with several `serve` processes (and the agent gateway, and client requests): an
// instance is charged by a conditional UPDATE … WHERE billed_until = <the value read>, so a period
// is charged exactly once; whoever loses that update re-reads and retries (LostRace).
import type { Kysely, Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { InstancesTable } from '../../db/tables/market.js';
import { tx, type Store } from '../../db/connection.js';
import { meter } from './billing.meter.js';
import { releaseMachine } from '../machines/machines.claim.js';
import { isActualStatus, isIntendedStatus, type ActualStatus, type IntendedStatus } from '../../../contract/instance-states.js';
import { nextTurn } from '../../clock.js';

export type InstanceRow = Selectable<InstancesTable>;

/** Thrown inside a transaction when a conditional update found the row changed: retry it all. */
export class LostRace extends Error {
  constructor(what: string) {
    super(`lost a race on ${what}`);
    this.name = 'LostRace';
  }
}

/** PostgreSQL aborted the transaction to break a deadlock or a serialization conflict. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === '40P01' || code === '40001';
}

/**
 * Runs `fn` in a write transaction, again (up to `tries`) when it lost a conditional update or
 * PostgreSQL broke a deadlock (settling locks instance then user; stopping a user's instances for
 * an exhausted balance holds the user and then takes more instances).
 */
export async function txRetry<T>(store: Store, fn: (trx: Kysely<DB>) => Promise<T>, tries = 8): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await tx(store, fn);
    } catch (err) {
      if (!(err instanceof LostRace || isTransient(err)) || i >= tries) throw err;
    }
  }
}

export function statusOf(row: Pick<InstanceRow, 'actual_status' | 'intended_status'>): { actual: ActualStatus; intended: IntendedStatus } {
  const actual = isActualStatus(row.actual_status) ? row.actual_status : null;
  const intended = isIntendedStatus(row.intended_status) ? row.intended_status : 'running';
  return { actual, intended };
}

/**
 * Charges `row` up to `now` at the rates of its current state, in the caller's transaction:
 * ledger rows, the user's balance and the instance's accrued cost move together. Returns the row
 * as it is afterwards. Throws LostRace when another writer settled it first.
 */
export async function settleInstance(trx: Kysely<DB>, row: InstanceRow, now: number): Promise<InstanceRow> {
  if (row.destroyed_at !== null) return row;
  const s = statusOf(row);
  const m = meter({ actual_status: s.actual, intended_status: s.intended, dph_compute: row.dph_compute, dph_disk: row.dph_disk, billed_until: row.billed_until }, now);
  if (m.seconds === 0) return row;
  const total = m.computeMicros + m.diskMicros;
  // The conditional update decides who charges this period (never read-then-write).
  const res = await trx
    .updateTable('instances')
    .set((eb) => ({ billed_until: m.until, accrued_micros: eb('accrued_micros', '+', total) }))
    .where('id', '=', row.id)
    .where('billed_until', '=', row.billed_until)
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new LostRace(`billing of instance ${row.id}`);
  const ledger = [];
  if (m.computeMicros > 0) ledger.push({ kind: 'compute', amount_micros: m.computeMicros });
  if (m.diskMicros > 0) ledger.push({ kind: 'disk', amount_micros: m.diskMicros });
  if (ledger.length > 0) {
    await trx
      .insertInto('billing_ledger')
      .values(ledger.map((l) => ({ ...l, user_id: row.user_id, instance_id: row.id, period_start: row.billed_until, period_end: m.until, created_at: now })))
      .execute();
    await trx
      .updateTable('users')
      .set((eb) => ({ balance_micros: eb('balance_micros', '-', total) }))
      .where('id', '=', row.user_id)
      .execute();
  }
  return { ...row, billed_until: m.until, accrued_micros: row.accrued_micros + total };
}

export const BALANCE_EXHAUSTED_MSG = 'Stopped: account balance exhausted; add credit and start it again';

/**
 * Stops (never destroys) every instance of a user whose balance has run out, settling each first
 * so the compute time up to the stop is charged. Disk keeps accruing (the spec's disk rule); the
 * machines are released for other clients.
 */
export async function stopForExhaustedBalance(trx: Kysely<DB>, userId: number, now: number): Promise<number[]> {
  const rows = await trx
    .selectFrom('instances')
    .selectAll()
    .where('user_id', '=', userId)
    .where('destroyed_at', 'is', null)
    .where('intended_status', '=', 'running')
    .execute();
  const stopped: number[] = [];
  for (const r of rows) {
    await settleInstance(trx, r, now);
    const actual = statusOf(r).actual;
    // Only a container that exists or is on its way is halted; others just lose the start wish.
    const next = actual === null || actual === 'loading' || actual === 'running' ? 'stopped' : actual;
    const res = await trx
      .updateTable('instances')
      .set({ intended_status: 'stopped', actual_status: next, status_msg: BALANCE_EXHAUSTED_MSG })
      .where('id', '=', r.id)
      .where('intended_status', '=', 'running')
      .where('destroyed_at', 'is', null)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) {
      stopped.push(r.id);
      // It was its machine's active instance: the machine is free for others (same transaction).
      await releaseMachine(trx, r.machine_id);
    }
  }
  return stopped;
}

export async function balanceOf(db: Kysely<DB>, userId: number): Promise<number> {
  const u = await db.selectFrom('users').select('balance_micros').where('id', '=', userId).executeTakeFirst();
  return u?.balance_micros ?? 0;
}

/**
 * One meter run: settles every live instance billed more than a second ago, then stops the
 * instances of users whose balance is exhausted. Safe with several processes running it at once.
 */
export async function runMeter(deps: { store: Store; clock: { now(): number } }, opts: { batch?: number; chunk?: number } = {}): Promise<{ settled: number; stopped: number[] }> {
  const now = deps.clock.now();
  const ids = await deps.store.db
    .selectFrom('instances')
    .select('id')
    .where('destroyed_at', 'is', null)
    .where('billed_until', '<=', now - 1000)
    .orderBy('billed_until')
    .limit(opts.batch ?? 1000)
    .execute();
  let settled = 0;
  const stopped: number[] = [];
  // A chunk of instances per transaction, not one each (issue 9: at 10,000 live instances the
  // meter's thousand commits per tick, each an fsync on SQLite, crowded out client requests).
  // An instance another writer settled first is skipped, not retried: nothing was written for it
  // (settleInstance's conditional update is its first write) and it is paid up to date already.
  // Between chunks the event loop serves requests: on SQLite every statement resolves at once, so
  // without the turn a run of 1,000 instances was one 250 ms stretch of microtasks that every
  // poll waited behind (the bench's polling p99 during heartbeats). 25 instances take ~6 ms.
  const chunk = opts.chunk ?? 25;
  for (let i = 0; i < ids.length; i += chunk) {
    if (i > 0) await nextTurn();
    const out = await txRetry(deps.store, async (trx) => {
      let did = 0;
      const stoppedHere: number[] = [];
      for (const { id } of ids.slice(i, i + chunk)) {
        const row = await trx.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirst();
        if (!row || row.destroyed_at !== null) continue;
        let after: InstanceRow;
        try {
          after = await settleInstance(trx, row, now);
        } catch (err) {
          if (err instanceof LostRace) continue;
          throw err;
        }
        if (after.billed_until !== row.billed_until) did++;
        if ((await balanceOf(trx, row.user_id)) <= 0) stoppedHere.push(...(await stopForExhaustedBalance(trx, row.user_id, now)));
      }
      return { did, stopped: stoppedHere };
    });
    settled += out.did;
    stopped.push(...out.stopped);
  }
  return { settled, stopped };
}
