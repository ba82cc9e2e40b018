// Every SQL statement of the instances module, the renter's list, v1 page and poll included
// (instances.query.ts checks their input and shapes the replies). A state change is a
// conditional UPDATE on the state it was decided in, so two writers can't both apply theirs.
import { sql, type Insertable, type Kysely, type RawBuilder, type Updateable } from 'kysely';
import type { Store } from '../../db/connection.js';
import { preparedRead } from '../../db/prepared.js';
import { windowsJson } from '../maintenance/maintenance.service.js';
import { mountsJson } from '../volumes/volumes.service.js';
import { INSTANCE_VIEW_COLS, MACHINE_COLS, type JoinedRow } from './instances.view.js';
import type { DB } from '../../db/schema.js';
import type { InstancesTable } from '../../db/tables/market.js';
import type { SqlDialect } from '../../db/dialect.js';
import type { ActualStatus } from '../../../contract/instance-states.js';
import type { InstanceRow } from '../billing/billing.service.js';
import { whereFilters, type SelectFilter } from '../../db/filters.js';

// ---- idempotency keys -----------------------------------------------------------------------

export function idempotencyRow(db: Kysely<DB>, userId: number, key: string) {
  return db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_enc', 'created_at'])
    .where('user_id', '=', userId)
    .where('idem_key', '=', key)
    .executeTakeFirst();
}

/**
 * Claims an idempotency key before anything else of a create (an expired row of it is forgotten
 * first); a concurrent create with the same key waits on the unique index, then fails with a
 * unique violation.
 */
export async function claimIdempotencyKey(
  db: Kysely<DB>,
  p: { userId: number; key: string; hash: string; now: number; ttlMs: number },
): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('user_id', '=', p.userId)
    .where('idem_key', '=', p.key)
    .where('created_at', '<', p.now - p.ttlMs)
    .execute();
  await db
    .insertInto('idempotency_keys')
    .values({
      user_id: p.userId,
      idem_key: p.key,
      request_hash: p.hash,
      instance_id: 0,
      response_enc: '',
      created_at: p.now,
    })
    .execute();
}

export async function storeIdempotentReply(
  db: Kysely<DB>,
  userId: number,
  key: string,
  instanceId: number,
  responseEnc: string,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ instance_id: instanceId, response_enc: responseEnc })
    .where('user_id', '=', userId)
    .where('idem_key', '=', key)
    .execute();
}

// ---- creating -------------------------------------------------------------------------------

/** The user's live SSH keys, copied onto a new instance. */
export function liveSshKeys(db: Kysely<DB>, userId: number) {
  return (
    db
      .selectFrom('ssh_keys')
      .select(['id', 'public_key', 'fingerprint'])
      .where('user_id', '=', userId)
      // The account's keys; keys attached to one instance only stay with it.
      .where('instance_id', 'is', null)
      .where('deleted_at', 'is', null)
      .orderBy('id')
      .execute()
  );
}

export async function insertInstance(db: Kysely<DB>, values: Insertable<InstancesTable>): Promise<number> {
  const r = await db.insertInto('instances').values(values).returning('id').executeTakeFirstOrThrow();
  return r.id;
}

export interface KeyCopy {
  ssh_key_id: number;
  public_key: string;
  fingerprint: string;
}

/** Attaches SSH keys to an instance; a key already attached stays as it is. */
export async function attachKeys(db: Kysely<DB>, instanceId: number, keys: KeyCopy[], now: number) {
  if (keys.length === 0) return;
  await db
    .insertInto('instance_ssh_keys')
    .values(keys.map((k) => ({ instance_id: instanceId, ...k, created_at: now })))
    .onConflict((oc) => oc.columns(['instance_id', 'ssh_key_id']).doNothing())
    .execute();
}

export async function detachKey(db: Kysely<DB>, instanceId: number, keyId: number): Promise<boolean> {
  const res = await db
    .deleteFrom('instance_ssh_keys')
    .where('instance_id', '=', instanceId)
    .where('ssh_key_id', '=', keyId)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** The instance's own API key (looked up by hash; may act on this instance only). */
export async function insertInstanceKey(
  db: Kysely<DB>,
  p: {
    userId: number;
    teamId: number | null;
    instanceId: number;
    keyHash: string;
    keyPrefix: string;
    now: number;
  },
): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      user_id: p.userId,
      team_id: p.teamId,
      kind: 'instance',
      instance_id: p.instanceId,
      name: `instance ${p.instanceId}`,
      key_hash: p.keyHash,
      key_prefix: p.keyPrefix,
      permissions: null,
      created_at: p.now,
    })
    .execute();
}

export async function revokeInstanceKey(db: Kysely<DB>, instanceId: number, now: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('instance_id', '=', instanceId)
    .where('kind', '=', 'instance')
    .where('revoked_at', 'is', null)
    .execute();
}

// ---- reading and moving ---------------------------------------------------------------------

export function instanceRow(db: Kysely<DB>, id: number): Promise<InstanceRow | undefined> {
  return db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirst();
}

export function ownInstanceRow(db: Kysely<DB>, userId: number, id: number): Promise<InstanceRow | undefined> {
  return db
    .selectFrom('instances')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export function instanceStatus(db: Kysely<DB>, id: number) {
  return db
    .selectFrom('instances')
    .select(['intended_status', 'actual_status', 'destroyed_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

export function machineDeletedAt(db: Kysely<DB>, machineId: number) {
  return db.selectFrom('machines').select('deleted_at').where('id', '=', machineId).executeTakeFirst();
}

/**
 * Sets `set` on a live instance only while it is in the state read: intended `intended` (when
 * given) and actual `actual` (when given; null matches a NULL actual_status). True when it moved.
 */
export async function moveInstance(
  db: Kysely<DB>,
  id: number,
  from: { intended?: string; actual?: ActualStatus },
  set: Updateable<InstancesTable>,
): Promise<boolean> {
  let q = db.updateTable('instances').set(set).where('id', '=', id).where('destroyed_at', 'is', null);
  if (from.intended !== undefined) q = q.where('intended_status', '=', from.intended);
  if (from.actual !== undefined) {
    const actual = from.actual;
    q = q.where((eb) =>
      actual === null ? eb('actual_status', 'is', null) : eb('actual_status', '=', actual),
    );
  }
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** What an update needs of the instance's machine: its ports, and whether its agent can recreate. */
export function machineForUpdate(db: Kysely<DB>, machineId: number) {
  return db
    .selectFrom('machines')
    .select(['id', 'deleted_at', 'direct_port_count', 'agent_uid', 'agent_config_generations'])
    .where('id', '=', machineId)
    .executeTakeFirst();
}

/**
 * Writes a new configuration of a live instance and moves its generation up by one, only while it
 * is as it was read: the same generation and the same statuses. Of two concurrent updates the
 * second finds the generation moved and writes nothing (false): it is decided again on the new row.
 */
export async function writeConfiguration(
  db: Kysely<DB>,
  id: number,
  from: { generation: number; intended: string; actual: ActualStatus },
  set: Updateable<InstancesTable>,
): Promise<boolean> {
  const actual = from.actual;
  const res = await db
    .updateTable('instances')
    .set((eb) => ({ ...set, config_generation: eb('config_generation', '+', 1) }))
    .where('id', '=', id)
    .where('destroyed_at', 'is', null)
    .where('config_generation', '=', from.generation)
    .where('intended_status', '=', from.intended)
    .where((eb) => (actual === null ? eb('actual_status', 'is', null) : eb('actual_status', '=', actual)))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Sets `set` on the user's live instance; false when there is none. */
export async function updateOwnLiveInstance(
  db: Kysely<DB>,
  userId: number,
  id: number,
  set: Updateable<InstancesTable>,
): Promise<boolean> {
  const res = await db
    .updateTable('instances')
    .set(set)
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** The live instances of a machine, by id. */
export function liveInstancesOn(db: Kysely<DB>, machineId: number): Promise<InstanceRow[]> {
  return db
    .selectFrom('instances')
    .selectAll()
    .where('machine_id', '=', machineId)
    .where('destroyed_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** The public key lines attached to a live instance, in the order they were attached. */
/**
 * The OpenSSH public key lines an instance accepts: the keys given to it (the account's keys at
 * creation, or attached since) that are still live, in their current form (an account key
 * replaced with PUT /ssh/{id} is the new line). Empty for a destroyed instance.
 */
export async function authorizedKeys(db: Kysely<DB>, instanceId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('instance_ssh_keys as isk')
    .innerJoin('ssh_keys as k', 'k.id', 'isk.ssh_key_id')
    .innerJoin('instances as i', 'i.id', 'isk.instance_id')
    .select('k.public_key')
    .where('isk.instance_id', '=', instanceId)
    .where('k.deleted_at', 'is', null)
    .where('i.destroyed_at', 'is', null)
    .orderBy('isk.id')
    .execute();
  return rows.map((r) => r.public_key);
}

// ---- requests carried out by the agent (logs, command, reboot, recycle) ---------------------

export async function insertInstanceRequest(
  db: Kysely<DB>,
  r: {
    instanceId: number;
    userId: number;
    kind: 'logs' | 'command' | 'reboot' | 'recycle';
    args: string;
    tokenHash: string | null;
    now: number;
    ttlMs: number;
  },
): Promise<void> {
  await db
    .insertInto('instance_requests')
    .values({
      instance_id: r.instanceId,
      user_id: r.userId,
      kind: r.kind,
      args: r.args,
      token_hash: r.tokenHash,
      created_at: r.now,
      expires_at: r.now + r.ttlMs,
      done_at: null,
      result: null,
    })
    .execute();
}

/** The reboot or recycle of this instance that its host has not yet carried out (newest first). */
export function pendingRestartRequest(db: Kysely<DB>, instanceId: number, now: number) {
  return db
    .selectFrom('instance_requests')
    .select(['id', 'kind', 'created_at'])
    .where('instance_id', '=', instanceId)
    .where('kind', 'in', ['reboot', 'recycle'])
    .where('done_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/** The output of a request by its result token's hash, while it has not expired. */
export function requestResultByToken(db: Kysely<DB>, tokenHash: string, now: number) {
  return db
    .selectFrom('instance_requests')
    .select(['done_at', 'result'])
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

// ---- the renter's reads: v0 list, v1 page, one instance (polled) -----------------------------

/** The caller's live (not destroyed) instances joined with their machines, nothing selected yet. */
function liveFrom(db: Kysely<DB>, userId: number | RawBuilder<number>) {
  return db
    .selectFrom('instances as i')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .where('i.user_id', '=', userId)
    .where('i.destroyed_at', 'is', null);
}

/**
 * The caller's live (not destroyed) instances, each joined with its machine's columns. `userId`
 * is the caller's id, or an SQL reference to it (the API key lookup's, http/auth.ts).
 */
function liveOf(db: Kysely<DB>, userId: number | RawBuilder<number>) {
  return liveFrom(db, userId).select(INSTANCE_VIEW_COLS).select(MACHINE_COLS);
}

/** liveOf, each row with its machine's current and upcoming maintenance windows and its mounted volumes (JSON). */
function liveWithWindows(
  on: { db: Kysely<DB>; dialect: SqlDialect },
  userId: number | RawBuilder<number>,
  now: number,
) {
  return liveOf(on.db, userId).select([
    windowsJson(on.dialect, sql.ref('i.machine_id'), now).as('windows_json'),
    mountsJson(on.dialect, sql.ref('i.id')).as('volumes_json'),
  ]);
}

/** The polled read: one of the caller's live instances with its machine's maintenance windows. */
export function liveInstanceQuery(
  on: { db: Kysely<DB>; dialect: SqlDialect },
  userId: number | RawBuilder<number>,
  id: number,
  now: number,
) {
  return liveWithWindows(on, userId, now).where('i.id', '=', id);
}

const oneInstance = preparedRead(
  (on, userId: number, id: number, now: number) => liveInstanceQuery(on, userId, id, now),
  { coalesce: true },
);

export type InstanceWithWindows = JoinedRow & { windows_json: unknown; volumes_json: unknown };

/**
 * The caller's live instances (the v0 list, by id), each with its machine's maintenance windows:
 * one prepared read off the write path (Store.read), as the polled one.
 */
export const liveInstancesWithWindows = preparedRead((on, userId: number, now: number) =>
  liveWithWindows(on, userId, now).orderBy('i.id').limit(10000),
);

/**
 * One of the caller's live instances with its machine's maintenance windows (JSON, in a
 * subquery): one prepared read, no query building, for the polling path.
 */
export async function liveInstanceWithWindows(
  store: Store,
  userId: number,
  id: number,
  now: number,
): Promise<InstanceWithWindows | undefined> {
  const [row] = (await oneInstance(store, userId, id, now)) as InstanceWithWindows[];
  return row;
}

/** One checked v1 filter: a column of the instance/machine join, an operator and its value(s). */
export type PageFilter = SelectFilter;

/** The caller's live instances that pass every filter, nothing selected yet. */
function filteredLive(db: Kysely<DB>, userId: number, filters: PageFilter[]) {
  return whereFilters(liveFrom(db, userId), filters);
}

/** The type of a v1 order key's values: every key is non-null, so keyset comparisons are total. */
export type PageKeyKind = 'int' | 'real' | 'string';

/**
 * What a v1 page can be ordered by, each an expression of the instance/machine join. Strings
 * order by code point on both databases; actual_status is NULL until the host first reports, and
 * orders as '' (before every status: first ascending, last descending). dph_total is computed
 * here, so ORDER BY and the keyset comparison read the same double, which the token carries.
 */
export const PAGE_ORDER_KEYS: Record<string, { kind: PageKeyKind; expr: RawBuilder<unknown> }> = {
  id: { kind: 'int', expr: sql`i.id` },
  machine_id: { kind: 'int', expr: sql`i.machine_id` },
  // The row's start_date: its start, or its creation before it has one.
  start_date: { kind: 'int', expr: sql`coalesce(i.start_date, i.created_at)` },
  label: { kind: 'string', expr: sql`i.label` },
  image_uuid: { kind: 'string', expr: sql`i.image` },
  actual_status: { kind: 'string', expr: sql`coalesce(i.actual_status, '')` },
  dph_total: { kind: 'real', expr: sql`(i.dph_compute + i.dph_disk)` },
  disk_space: { kind: 'real', expr: sql`i.disk` },
  num_gpus: { kind: 'int', expr: sql`m.num_gpus` },
  gpu_name: { kind: 'string', expr: sql`m.gpu_name` },
  geolocation: { kind: 'string', expr: sql`m.geolocation` },
};

/**
 * A v1 page: the filters, then keyset pagination (rows strictly after `after` in the order of
 * the keys, per key direction), at most `limit` rows, each with its values of the keys (what a
 * token carries).
 */
export async function instancePageRows(
  on: { db: Kysely<DB>; dialect: SqlDialect },
  userId: number,
  p: {
    filters: PageFilter[];
    order: { name: string; dir: 'asc' | 'desc' }[];
    after: (string | number)[] | null;
    limit: number;
  },
): Promise<{ row: JoinedRow; key: (string | number)[] }[]> {
  const keys = p.order.map((o) => {
    const k = PAGE_ORDER_KEYS[o.name]!;
    const expr = k.kind === 'string' ? on.dialect.codePointOrder(k.expr as RawBuilder<string>) : k.expr;
    return { expr, dir: o.dir };
  });
  let qb = filteredLive(on.db, userId, p.filters)
    .select(INSTANCE_VIEW_COLS)
    .select(MACHINE_COLS)
    .select(keys.map((k, i) => k.expr.as(`order_key_${i}`)));
  const after = p.after;
  if (after) {
    qb = qb.where((eb) =>
      eb.or(
        keys.map((k, i) =>
          eb.and([
            ...keys.slice(0, i).map((q, j) => eb(q.expr, '=', after[j]!)),
            eb(k.expr, k.dir === 'asc' ? '>' : '<', after[i]!),
          ]),
        ),
      ),
    );
  }
  for (const k of keys) qb = qb.orderBy(k.expr, k.dir);
  const rows = (await qb.limit(p.limit).execute()) as (JoinedRow & Record<string, unknown>)[];
  return rows.map((r) => {
    const key = keys.map((_, i) => r[`order_key_${i}`] as string | number);
    for (let i = 0; i < keys.length; i++) delete r[`order_key_${i}`];
    return { row: r, key };
  });
}

/** How many of the caller's live instances pass the filters (every page), by label. */
export async function instanceLabelCounts(
  db: Kysely<DB>,
  userId: number,
  filters: PageFilter[],
): Promise<{ label: string; n: number }[]> {
  const rows = await filteredLive(db, userId, filters)
    .select((eb) => ['i.label', eb.fn.countAll<number | string>().as('n')])
    .groupBy('i.label')
    .orderBy('i.label')
    .execute();
  // PostgreSQL's count is a bigint, which the driver gives as a string.
  return rows.map((r) => ({ label: r.label, n: Number(r.n) }));
}

/**
 * The distinct (status, machine verification, GPU) combinations among the caller's live
 * instances: the values the v1 filters can usefully take.
 */
export function instanceFilterValues(db: Kysely<DB>, userId: number) {
  return liveFrom(db, userId).select(['i.actual_status', 'm.verified', 'm.gpu_name']).distinct().execute();
}

// ---- the market (instances.market.ts) --------------------------------------------------------

/** The machine's active instance (not destroyed, not stopped): at most one (unique index). */
export function activeInstanceOn(db: Kysely<DB>, machineId: number): Promise<InstanceRow | undefined> {
  return db
    .selectFrom('instances')
    .selectAll()
    .where('machine_id', '=', machineId)
    .where('destroyed_at', 'is', null)
    .where('intended_status', '<>', 'stopped')
    .executeTakeFirst();
}

/** The machine's waiting bids, best first: higher bid, then the earlier bid, then the lower id. */
export function waitingBidsOn(db: Kysely<DB>, machineId: number, limit: number): Promise<InstanceRow[]> {
  return db
    .selectFrom('instances')
    .selectAll()
    .where('machine_id', '=', machineId)
    .where('bid_waiting', '=', 1)
    .where('destroyed_at', 'is', null)
    .orderBy('dph_compute', 'desc')
    .orderBy('bid_at', 'asc')
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
}

/**
 * Machines where a waiting bid could run now: free (no active instance) and not deleted, or held by
 * a bid lower than the best waiting one is checked by the market itself. Walks the partial index of
 * waiting bids.
 */
export async function machinesWithWaitingBids(db: Kysely<DB>, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('instances as i')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .select('i.machine_id')
    .distinct()
    .where('i.bid_waiting', '=', 1)
    .where('i.destroyed_at', 'is', null)
    .where('m.rented', '=', 0)
    .where('m.deleted_at', 'is', null)
    .limit(limit)
    .execute();
  return rows.map((r) => r.machine_id);
}

/** The e-mail address and name of a user (the market's notices). */
export function userContact(db: Kysely<DB>, userId: number) {
  return db.selectFrom('users').select(['email', 'full_name']).where('id', '=', userId).executeTakeFirst();
}

/**
 * A waiting bid becomes active: conditional on it still waiting (a client's stop or destroy of it
 * meanwhile wins). The partial unique index refuses a second active instance of the machine.
 */
export async function resumeWaitingBid(db: Kysely<DB>, id: number, msg: string): Promise<boolean> {
  const res = await db
    .updateTable('instances')
    .set({ intended_status: 'running', bid_waiting: 0, preempt_until: null, status_msg: msg })
    .where('id', '=', id)
    .where('bid_waiting', '=', 1)
    .where('intended_status', '=', 'stopped')
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Stops a waiting bid from waiting (a client's stop): it stays stopped until started again. */
export async function stopWaiting(db: Kysely<DB>, id: number, msg: string): Promise<boolean> {
  const res = await db
    .updateTable('instances')
    .set({ bid_waiting: 0, status_msg: msg })
    .where('id', '=', id)
    .where('bid_waiting', '=', 1)
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Sets a bid instance's price (the meter charges dph_compute) and when it was set. */
export async function setBid(db: Kysely<DB>, id: number, price: number, now: number): Promise<boolean> {
  const res = await db
    .updateTable('instances')
    .set({ dph_compute: price, bid_at: now })
    .where('id', '=', id)
    .where('is_bid', '=', 1)
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
