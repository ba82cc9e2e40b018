// Month budgets, enforced: every check (each meter interval) adds up what each budgeted scope (a
// team, a member within a team, an API key) was charged this calendar month (UTC). At 80 % its
// owners are warned, at 100 % too, each once per scope and month (the quota_alerts primary key
// decides, whichever process checks first), by e-mail and a webhook event (budget.warning,
// budget.exhausted); from 100 % on, the scope's instances meant to run are stopped, never
// destroyed, at every check (one started again is stopped again), each settled first so its
// compute up to the stop is charged. Creates in the scope are refused meanwhile (admitCreate).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import { txRetry } from '../../db/tx.js';
import { settleInstance, statusOf } from '../billing/billing.service.js';
import { releaseMachine } from '../machines/machines.service.js';
import { enqueueEmails } from '../notifications/notifications.outbox.js';
import { instanceEvent, recordEvent, recordEvents } from '../webhooks/webhooks.events.js';
import { every, type Job } from '../../jobs/every.js';
import { budgetMail } from './quotas.mail.js';
import * as repo from './quotas.repo.js';
import { monthKey, monthStart } from './quotas.service.js';

export const BUDGET_STOP_MSG =
  'Stopped: the month budget that pays for it is spent; raise it and start it again';

type Scope =
  | { kind: 'team'; teamId: number; memberId: null; budget: number }
  | { kind: 'member'; teamId: number; memberId: number; budget: number }
  | { kind: 'key'; keyId: number; userId: number; email: string; name: string; budget: number };

function scopeKey(s: Scope): string {
  if (s.kind === 'key') return `key:${s.keyId}`;
  return s.kind === 'team' ? `team:${s.teamId}` : `member:${s.teamId}:${s.memberId}`;
}

function scopeWhat(s: Scope): string {
  if (s.kind === 'key')
    return `API key ${s.keyId}${s.name ? ` (${JSON.stringify(s.name.slice(0, 64))})` : ''}`;
  return s.kind === 'team' ? `team ${s.teamId}` : `member ${s.memberId} of team ${s.teamId}`;
}

/**
 * Who is told: a team's owner (its members with the owner role, else its managers, when the team
 * names none), and for a member's budget that member too; a key's account for a key's budget.
 */
async function recipients(db: Kysely<DB>, s: Scope): Promise<{ user_id: number; email: string }[]> {
  if (s.kind === 'key') return [{ user_id: s.userId, email: s.email }];
  const owner = await repo.teamOwner(db, s.teamId);
  let list = owner ? [owner] : await repo.membersWithRoles(db, s.teamId, ['owner']);
  if (list.length === 0) list = await repo.membersWithRoles(db, s.teamId, ['manager']);
  const out = list.map((r) => ({ user_id: Number(r.user_id), email: r.email }));
  if (s.kind === 'member' && !out.some((r) => r.user_id === s.memberId)) {
    const m = await repo.userById(db, s.memberId);
    if (m) out.push({ user_id: Number(m.id), email: m.email });
  }
  return out;
}

/** Stops the scope's instances meant to run, settled first; the machines they held. */
async function stopScope(
  db: Kysely<DB>,
  s: Scope,
  now: number,
): Promise<{ ids: number[]; machines: number[] }> {
  const rows = await repo.runningInstancesIn(
    db,
    s.kind === 'key' ? { keyId: s.keyId } : { teamId: s.teamId, memberId: s.memberId },
  );
  const ids: number[] = [];
  const machines: number[] = [];
  for (const r of rows) {
    await settleInstance(db, r, now);
    const actual = statusOf(r).actual;
    // Only a container that exists or is on its way is halted; others just lose the start wish.
    const next = actual === null || actual === 'loading' || actual === 'running' ? 'stopped' : actual;
    if (!(await repo.stopRunning(db, r.id, next, BUDGET_STOP_MSG))) continue;
    ids.push(r.id);
    machines.push(r.machine_id);
    await releaseMachine(db, r.machine_id);
    if (next !== actual)
      await recordEvent(
        db,
        now,
        instanceEvent(r, actual, next, { intended_status: 'stopped', status_msg: BUDGET_STOP_MSG }),
      );
  }
  return { ids, machines };
}

async function spentIn(db: Kysely<DB>, s: Scope, from: number): Promise<number> {
  return s.kind === 'key'
    ? repo.keySpend(db, s.keyId, from)
    : repo.monthSpend(db, s.teamId, s.memberId, from);
}

/** One scope's check, in one transaction: alerts due, and the stop at 100 %. */
async function checkScope(
  deps: Pick<Deps, 'store'>,
  s: Scope,
  now: number,
): Promise<{ alerts: number; stopped: number[]; machines: number[] }> {
  const month = monthKey(now);
  const from = monthStart(now);
  return txRetry(deps.store, async (db) => {
    const spent = await spentIn(db, s, from);
    const out = { alerts: 0, stopped: [] as number[], machines: [] as number[] };
    if (spent < s.budget * 0.8) return out;
    const full = spent >= s.budget;
    if (full) {
      const st = await stopScope(db, s, now);
      out.stopped = st.ids;
      out.machines = st.machines;
    }
    for (const level of full ? ([80, 100] as const) : ([80] as const)) {
      if (
        !(await repo.insertAlert(db, {
          scope: scopeKey(s),
          month,
          level,
          spent_micros: spent,
          created_at: now,
        }))
      )
        continue;
      // Reaching 100 % in one step sends the 100 % warning only.
      if (level === 80 && full) continue;
      out.alerts++;
      const to = await recipients(db, s);
      const mail = budgetMail({
        what: scopeWhat(s),
        month,
        budgetUsd: s.budget / 1e6,
        spentUsd: spent / 1e6,
        level,
        stopped: out.stopped,
      });
      await enqueueEmails(
        db,
        now,
        to.map((r) => ({
          key: `budget:${scopeKey(s)}:${month}:${level}:${r.user_id}`,
          to: r.email,
          ...mail,
          category: `budget.${level}`,
        })),
      );
      const data = {
        scope: s.kind,
        ...(s.kind === 'key' ? { api_key_id: s.keyId } : { team_id: s.teamId }),
        ...(s.kind === 'member' ? { user_id: s.memberId } : {}),
        month,
        budget: s.budget / 1e6,
        spent: spent / 1e6,
        percent: level,
        stopped_instances: out.stopped,
      };
      await recordEvents(
        db,
        now,
        to.map((r) => ({
          userId: r.user_id,
          type: level === 80 ? ('budget.warning' as const) : ('budget.exhausted' as const),
          subject: `budget:${scopeKey(s)}`,
          data,
        })),
      );
    }
    return out;
  });
}

/** One check of every month budget. Safe with several processes running it at once. */
export async function runBudgetCheck(
  deps: Pick<Deps, 'store' | 'db' | 'clock' | 'agentWake' | 'kickOutbox'>,
): Promise<{ alerts: number; stopped: number[] }> {
  const now = deps.clock.now();
  const scopes: Scope[] = [];
  for (const r of await repo.budgetedScopes(deps.db)) {
    const budget = Number(r.month_budget_micros);
    const userId = Number(r.user_id);
    scopes.push(
      userId === 0
        ? { kind: 'team', teamId: Number(r.team_id), memberId: null, budget }
        : { kind: 'member', teamId: Number(r.team_id), memberId: userId, budget },
    );
  }
  for (const k of await repo.budgetedKeys(deps.db))
    scopes.push({
      kind: 'key',
      keyId: Number(k.api_key_id),
      userId: Number(k.user_id),
      email: k.email,
      name: k.name,
      budget: Number(k.month_budget_micros),
    });
  let alerts = 0;
  const stopped: number[] = [];
  const machines: number[] = [];
  for (const s of scopes) {
    const r = await checkScope(deps, s, now);
    alerts += r.alerts;
    stopped.push(...r.stopped);
    machines.push(...r.machines);
  }
  if (machines.length > 0) deps.agentWake.notify([...new Set(machines)]);
  if (alerts > 0) deps.kickOutbox();
  return { alerts, stopped };
}

/** The budget check loop: once per meter interval (OPENRIG_METER_INTERVAL_MS). */
export function startBudgetCheck(deps: Deps, onError: (err: unknown) => void): Job {
  return every(
    'quota-budgets',
    deps.config.billing.meterIntervalMs,
    async () => {
      const r = await runBudgetCheck(deps);
      if (r.stopped.length > 0)
        deps.log.info({ stopped: r.stopped }, 'instances stopped: month budget spent');
    },
    onError,
  );
}
