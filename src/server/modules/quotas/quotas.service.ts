// Quotas and budgets (docs/quotas.md). A team's owner or a manager sets limits for the team as a
// whole and for each member within it: the most GPUs running at once, the most $/hour running at
// once, and a spend budget per calendar month (UTC). An account sets a month budget on each of its
// API keys. Limits count the instances created in the team's context (a team key or session):
// their team_id. A create that would pass one is refused with 403 quota_exceeded naming the
// limit and the numbers (admitCreate, called inside the create's transaction); a budget that runs
// out stops the instances it pays for (quotas.budget.ts).
//
// Races: admitCreate first locks each scope's limit row with a write (UPDATE … SET holds = holds
// + 1), then counts what runs. Concurrent creates against one scope wait on that row one after
// the other, and each counts the instances the ones before it committed (PostgreSQL's read
// committed takes a new snapshot per statement; SQLite runs one write transaction at a time).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { tx } from '../../db/connection.js';
import { QuotaErrors } from './quotas.errors.js';
import * as repo from './quotas.repo.js';
import { MANAGING_ROLES } from './quotas.repo.js';

export { listSubaccounts, transferCredit } from './quotas.credit.js';

const MICROS = 1_000_000;
const usd = (micros: number) => Math.round(micros) / MICROS;

/** 'YYYY-MM' of the UTC calendar month `now` falls in. */
export function monthKey(now: number): string {
  return new Date(now).toISOString().slice(0, 7);
}

/** The first millisecond of the UTC calendar month `now` falls in. */
export function monthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The person behind a credential: in a team context the member acting, else the account. */
export const personOf = (auth: AuthContext): number => auth.member?.userId ?? auth.user.id;

/**
 * Who sets a team's limits: its owner and managers (by role name), and a member whose role may
 * write the team (team: write, or a role with every permission).
 */
function canManage(m: { role: string; permissions: string | null } | null): boolean {
  if (m === null) return false;
  if ((MANAGING_ROLES as readonly string[]).includes(m.role)) return true;
  if (m.permissions === null) return true;
  try {
    return (JSON.parse(m.permissions) as Record<string, string>).team === 'write';
  } catch {
    return false;
  }
}

/**
 * The team a quotas call is about: `raw` when given, else the team of the key or session, else the
 * one team the caller owns or manages, else the one team it is in. The caller must be a member.
 */
async function resolveTeam(
  db: Kysely<DB>,
  auth: AuthContext,
  raw: number | string | undefined,
): Promise<{ teamId: number; member: { role: string; permissions: string | null } }> {
  let teamId = raw === undefined || raw === '' ? null : Number(raw);
  if (teamId !== null && auth.teamId !== null && teamId !== auth.teamId)
    throw QuotaErrors.notFound(`This credential acts for team ${auth.teamId}, not team ${teamId}`);
  teamId ??= auth.teamId;
  if (teamId === null) {
    const mine = await repo.teamsOf(db, personOf(auth));
    const managed = mine.filter((t) => (MANAGING_ROLES as readonly string[]).includes(t.role));
    const pick = managed.length === 1 ? managed : mine.length === 1 ? mine : [];
    if (pick.length === 0)
      throw QuotaErrors.badRequest(
        mine.length === 0
          ? 'You are in no team: limits are set per team (team_id)'
          : `You are in ${mine.length} teams: name one with team_id (${mine.map((t) => t.team_id).join(', ')})`,
      );
    teamId = Number(pick[0]!.team_id);
  }
  const member = await repo.memberRole(db, teamId, personOf(auth));
  if (member === null) throw QuotaErrors.notFound(`No team ${teamId}, or you are not one of its members`);
  return { teamId, member };
}

function scopeView(
  row: repo.LimitRow | undefined,
  running: { gpus: number; dphMicros: number },
  spentMicros: number,
) {
  return {
    max_gpus: row?.max_gpus ?? null,
    max_dph: row?.max_dph_micros == null ? null : usd(row.max_dph_micros),
    month_budget: row?.month_budget_micros == null ? null : usd(row.month_budget_micros),
    running_gpus: running.gpus,
    running_dph: usd(running.dphMicros),
    month_spend: usd(spentMicros),
  };
}

async function quotasView(
  db: Kysely<DB>,
  teamId: number,
  member: { role: string; permissions: string | null },
  now: number,
  msg?: string,
) {
  const from = monthStart(now);
  const [name, limits, members, runs, spends, teamRun, teamSpent] = await Promise.all([
    repo.teamName(db, teamId),
    repo.limitsOfTeam(db, teamId),
    repo.teamMembers(db, teamId),
    repo.runningByMember(db, teamId),
    repo.spendByMember(db, teamId, from),
    repo.runningUsage(db, teamId, null),
    repo.monthSpend(db, teamId, null, from),
  ]);
  const limitOf = new Map(limits.map((l) => [Number(l.user_id), l]));
  const runOf = new Map(
    runs.map((r) => [
      Number(r.member_id),
      { gpus: Number(r.gpus), dphMicros: Math.round(Number(r.dph) * MICROS) },
    ]),
  );
  const spentOf = new Map(spends.map((s) => [Number(s.member_id), Number(s.micros)]));
  return {
    success: true,
    ...(msg ? { msg } : {}),
    team_id: teamId,
    team_name: name ?? '',
    month: monthKey(now),
    can_manage: canManage(member),
    team: scopeView(limitOf.get(0), teamRun, teamSpent),
    members: members.map((m) => ({
      user_id: Number(m.user_id),
      email: m.email,
      role: m.role,
      ...scopeView(
        limitOf.get(Number(m.user_id)),
        runOf.get(Number(m.user_id)) ?? { gpus: 0, dphMicros: 0 },
        spentOf.get(Number(m.user_id)) ?? 0,
      ),
    })),
  };
}

/** GET /quotas: a team's limits and each member's, with what runs and this month's spend. */
export async function getQuotas(deps: Pick<Deps, 'db' | 'clock'>, auth: AuthContext, teamIdRaw?: string) {
  const { teamId, member } = await resolveTeam(deps.db, auth, teamIdRaw);
  return quotasView(deps.db, teamId, member, deps.clock.now());
}

export interface SetQuotaBody {
  team_id?: number;
  user_id?: number;
  email?: string;
  max_gpus?: number | null;
  max_dph?: number | null;
  month_budget?: number | null;
}

/** The member a body names (user_id or email), 0 for the team as a whole; a 400 for a non-member. */
async function memberOf(db: Kysely<DB>, teamId: number, body: { user_id?: number; email?: string }) {
  if (body.user_id !== undefined && body.email !== undefined)
    throw QuotaErrors.badRequest('name the member by user_id or by email, not both');
  let userId = body.user_id ?? null;
  if (body.email !== undefined) {
    userId = await repo.userIdByEmail(db, body.email.trim().toLowerCase());
    if (userId === null)
      throw QuotaErrors.badRequest(`No account has the e-mail ${JSON.stringify(body.email)}`);
  }
  if (userId === null) return 0;
  if ((await repo.memberRole(db, teamId, userId)) === null)
    throw QuotaErrors.badRequest(`User ${userId} is not a member of team ${teamId}`);
  return userId;
}

const toMicros = (v: number | null | undefined, keep: number | null): number | null =>
  v === undefined ? keep : v === null ? null : Math.round(v * MICROS);

/** PUT /quotas: an owner or manager sets a team's limits or a member's. */
export async function setQuota(
  deps: Pick<Deps, 'db' | 'store' | 'clock'>,
  auth: AuthContext,
  body: SetQuotaBody,
) {
  const { teamId, member } = await resolveTeam(deps.db, auth, body.team_id);
  if (!canManage(member)) throw QuotaErrors.notManager();
  if (body.max_gpus === undefined && body.max_dph === undefined && body.month_budget === undefined)
    throw QuotaErrors.badRequest('give at least one of max_gpus, max_dph, month_budget (null clears one)');
  const now = deps.clock.now();
  const userId = await memberOf(deps.db, teamId, body);
  await tx(deps.store, async (db) => {
    const old = await repo.limitRow(db, teamId, userId);
    const next = {
      max_gpus: body.max_gpus === undefined ? (old?.max_gpus ?? null) : body.max_gpus,
      max_dph_micros: toMicros(body.max_dph, old?.max_dph_micros ?? null),
      month_budget_micros: toMicros(body.month_budget, old?.month_budget_micros ?? null),
    };
    if (next.max_gpus === null && next.max_dph_micros === null && next.month_budget_micros === null)
      await repo.deleteLimits(db, teamId, userId);
    else
      await repo.upsertLimits(db, {
        team_id: teamId,
        user_id: userId,
        ...next,
        updated_by: personOf(auth),
        updated_at: now,
      });
  });
  const who = userId === 0 ? `team ${teamId}` : `member ${userId} of team ${teamId}`;
  return quotasView(deps.db, teamId, member, now, `Limits of ${who} set`);
}

/** DELETE /quotas: removes every limit of a team, or of a member. */
export async function deleteQuota(
  deps: Pick<Deps, 'db' | 'clock'>,
  auth: AuthContext,
  body: { team_id?: number; user_id?: number; email?: string },
) {
  const { teamId, member } = await resolveTeam(deps.db, auth, body.team_id);
  if (!canManage(member)) throw QuotaErrors.notManager();
  const userId = await memberOf(deps.db, teamId, body);
  await repo.deleteLimits(deps.db, teamId, userId);
  const who = userId === 0 ? `team ${teamId}` : `member ${userId} of team ${teamId}`;
  return quotasView(deps.db, teamId, member, deps.clock.now(), `Limits of ${who} removed`);
}

async function keyLimitsView(db: Kysely<DB>, userId: number, now: number, msg?: string) {
  const from = monthStart(now);
  const keys = await repo.keysWithLimits(db, userId);
  const out = [];
  for (const k of keys)
    out.push({
      api_key_id: Number(k.id),
      name: k.name,
      month_budget: k.month_budget_micros == null ? null : usd(k.month_budget_micros),
      month_spend: usd(await repo.keySpend(db, Number(k.id), from)),
    });
  return { success: true, ...(msg ? { msg } : {}), month: monthKey(now), keys: out };
}

/** GET /quotas/keys: the account's keys with their month budgets and spend. */
export function getKeyLimits(deps: Pick<Deps, 'db' | 'clock'>, auth: AuthContext) {
  return keyLimitsView(deps.db, auth.user.id, deps.clock.now());
}

/** PUT /quotas/keys/{id}: sets (or with null removes) one of the account's keys' month budget. */
export async function setKeyLimit(
  deps: Pick<Deps, 'db' | 'clock'>,
  auth: AuthContext,
  keyId: number,
  budget: number | null,
) {
  const key = await repo.ownKey(deps.db, auth.user.id, keyId);
  if (!key) throw QuotaErrors.notFound(`No API key ${keyId} of yours`);
  const now = deps.clock.now();
  if (budget === null) await repo.deleteKeyLimit(deps.db, keyId);
  else
    await repo.upsertKeyLimit(deps.db, {
      api_key_id: keyId,
      user_id: auth.user.id,
      month_budget_micros: Math.round(budget * MICROS),
      updated_at: now,
    });
  return keyLimitsView(
    deps.db,
    auth.user.id,
    now,
    budget === null ? `Key ${keyId} has no budget now` : `Key ${keyId}'s month budget set to $${budget}`,
  );
}

export interface CreateAsk {
  /** The team the create is made for (AuthContext.teamId), or null. */
  teamId: number | null;
  /** In a team context, the member acting (AuthContext.member.userId); else null. */
  memberId: number | null;
  /** The API key behind the credential (AuthContext.originKeyId), or null. */
  keyId: number | null;
  gpus: number;
  /** $/hour of the new instance, compute and disk. */
  dph: number;
  now: number;
}

const fmtUsd = (micros: number) => `$${usd(micros)}`;

function refuse(
  scope: 'team' | 'member' | 'api_key',
  who: string,
  limit: 'max_gpus' | 'max_dph' | 'month_budget',
  msg: string,
  numbers: { limit_value: number; current: number; requested: number },
  ids: { team_id?: number; user_id?: number; api_key_id?: number },
): never {
  throw QuotaErrors.quotaExceeded(`${who}: ${msg}`, { scope, limit, ...ids, ...numbers });
}

/**
 * Refuses (403 quota_exceeded) a create that would pass a limit of its team, of its member in the
 * team, or of its API key's budget. Call it inside the create's transaction, before the instance
 * is inserted: it locks each limit row it checks until that transaction ends.
 */
export async function admitCreate(db: Kysely<DB>, ask: CreateAsk): Promise<void> {
  const from = monthStart(ask.now);
  const dphMicros = Math.round(ask.dph * MICROS);
  if (ask.teamId !== null) {
    // Team row first, then the member's: every create locks them in this order (no deadlock).
    for (const userId of ask.memberId === null ? [0] : [0, ask.memberId]) {
      const row = await repo.lockLimit(db, ask.teamId, userId);
      if (!row) continue;
      const scope = userId === 0 ? 'team' : 'member';
      const who =
        userId === 0 ? `Team ${ask.teamId}'s limit` : `Your limit as a member of team ${ask.teamId}`;
      const ids: { team_id: number; user_id?: number } =
        userId === 0 ? { team_id: ask.teamId } : { team_id: ask.teamId, user_id: userId };
      const scopeUser = userId === 0 ? null : userId;
      if (row.max_gpus !== null || row.max_dph_micros !== null) {
        const used = await repo.runningUsage(db, ask.teamId, scopeUser);
        if (row.max_gpus !== null && used.gpus + ask.gpus > row.max_gpus)
          refuse(
            scope,
            who,
            'max_gpus',
            `at most ${row.max_gpus} GPUs running at once; ${used.gpus} run now and this create needs ${ask.gpus}`,
            { limit_value: row.max_gpus, current: used.gpus, requested: ask.gpus },
            ids,
          );
        if (row.max_dph_micros !== null && used.dphMicros + dphMicros > row.max_dph_micros)
          refuse(
            scope,
            who,
            'max_dph',
            `at most ${fmtUsd(row.max_dph_micros)}/hour running at once; ${fmtUsd(used.dphMicros)}/hour runs now and this create adds ${fmtUsd(dphMicros)}/hour`,
            { limit_value: usd(row.max_dph_micros), current: usd(used.dphMicros), requested: usd(dphMicros) },
            ids,
          );
      }
      if (row.month_budget_micros !== null) {
        const spent = await repo.monthSpend(db, ask.teamId, scopeUser, from);
        if (spent >= row.month_budget_micros)
          refuse(
            scope,
            who,
            'month_budget',
            `a budget of ${fmtUsd(row.month_budget_micros)} for ${monthKey(ask.now)}, of which ${fmtUsd(spent)} is spent`,
            { limit_value: usd(row.month_budget_micros), current: usd(spent), requested: usd(dphMicros) },
            ids,
          );
      }
    }
  }
  if (ask.keyId !== null) {
    const row = await repo.lockKeyLimit(db, ask.keyId);
    if (row) {
      const spent = await repo.keySpend(db, ask.keyId, from);
      if (spent >= row.month_budget_micros)
        refuse(
          'api_key',
          `API key ${ask.keyId}'s budget`,
          'month_budget',
          `${fmtUsd(row.month_budget_micros)} for ${monthKey(ask.now)}, of which its instances spent ${fmtUsd(spent)}`,
          { limit_value: usd(row.month_budget_micros), current: usd(spent), requested: usd(dphMicros) },
          { api_key_id: ask.keyId },
        );
    }
  }
}

/**
 * Records who created an instance, in the create's transaction: the API key (what its budget
 * counts) and the team and member (what a member's limits count).
 */
export async function noteCreated(
  db: Kysely<DB>,
  p: {
    instanceId: number;
    keyId: number | null;
    teamId: number | null;
    memberId: number | null;
    now: number;
  },
): Promise<void> {
  if (p.keyId === null && p.memberId === null) return;
  await repo.insertOrigin(db, {
    instance_id: p.instanceId,
    api_key_id: p.keyId,
    team_id: p.teamId,
    member_id: p.memberId,
    created_at: p.now,
  });
}
