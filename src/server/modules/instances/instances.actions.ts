// Client actions on instances: stop / start / label (PUT), destroy (DELETE), their bulk forms,
// and SSH key attach / detach. Each move is decided by the state machine and written with a
// conditional UPDATE on the state it was decided in (LostRace → decided again), after settling
// billing at the rates of the state being left.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { AppError, quoteValue } from '../../errors.js';
import { assertPlainText } from '../../http/plain-text.js';
import {
  decideStateRequest,
  isIntendedStatus,
  type IntendedStatus,
} from '../../../contract/instance-states.js';
import {
  balanceOf,
  refundDeposit,
  settleInstance,
  statusOf,
  type InstanceRow,
} from '../billing/billing.service.js';
import { LostRace, txRetry } from '../../db/tx.js';
import {
  parseOrThrow,
  deleteInstanceOnlyKey,
  findAccountKey,
  findInstanceOnlyKey,
  insertSshKey,
} from '../ssh-keys/ssh-keys.service.js';
import { claimMachine, holdDisk, releaseMachine } from '../machines/machines.service.js';
import * as repo from './instances.repo.js';
import { isUniqueViolation, tx } from '../../db/connection.js';
import { InstanceErrors } from './instances.errors.js';
import { diskMb } from './instances.create.js';
import { instanceEvent, recordEvent } from '../webhooks/webhooks.events.js';
import { dropInstanceEnv } from '../env-vars/env-vars.service.js';
import { arbitrate, preemptForClaim, type MarketConfig } from './instances.market.js';
import { bidStateChange, machineOf } from './instances.bid.js';
import { admitCreate } from '../quotas/quotas.service.js';

// The live instances on a machine, read by deleting a machine (machines.delete.ts).
export { liveInstancesOn } from './instances.repo.js';

/** The caller's live instance (in the transaction), or 404. */
async function ownRow(db: Kysely<DB>, auth: AuthContext, id: number): Promise<InstanceRow> {
  const row = await repo.ownInstanceRow(db, auth.user.id, id);
  if (!row) throw InstanceErrors.notFound(`No such instance: ${id}`);
  return row;
}

function destroyedError(id: number): AppError {
  return InstanceErrors.invalidState(`Instance ${id} is destroyed`);
}

/**
 * PUT {state: "stopped" | "running"}: repeats are harmless (success, nothing changes).
 * A stop releases the machine for other clients in the same transaction (the data stays on the
 * host; disk keeps billing). A start of a stopped instance re-claims the machine with a
 * conditional update; if another client rented it meanwhile, 409 machine_unavailable and nothing
 * changes (the transaction, with its billing settlement, rolls back).
 */
export async function changeState(
  deps: Deps,
  auth: AuthContext,
  id: number,
  want: IntendedStatus,
): Promise<{ changed: boolean }> {
  const now = deps.clock.now();
  let machineId: number | null = null;
  try {
    const r = await txRetry(deps.store, async (db) => {
      const row = await ownRow(db, auth, id);
      machineId = row.machine_id;
      if (row.destroyed_at !== null) throw destroyedError(id);
      // A bid that is stopped or waits takes the market's way (instances.market.ts).
      if (row.is_bid === 1 && row.intended_status === 'stopped') {
        const r = await bidStateChange(deps, db, row, want, now);
        if (r !== null) return r;
      }
      const s = statusOf(row);
      const d = decideStateRequest(s, want);
      if (d.kind === 'noop') return { changed: false };
      if (d.kind === 'refuse') throw InstanceErrors.invalidState(d.msg);
      if (want === 'running' && (await balanceOf(db, row.user_id)) <= 0)
        throw InstanceErrors.insufficientBalance();
      await settleInstance(db, row, now);
      const claims = s.intended === 'stopped' && d.next.intended === 'running';
      const releases = s.intended === 'running' && d.next.intended === 'stopped';
      // A start counts against the team's, the member's and the key's limits as a create does
      // (quotas.service.ts), decided in this transaction.
      if (claims)
        await admitCreate(db, {
          teamId: row.team_id,
          memberId: auth.member?.userId ?? null,
          keyId: auth.originKeyId ?? auth.keyId,
          gpus: (await machineOf(db, row.machine_id)).num_gpus,
          dph: row.dph_compute + row.dph_disk,
          now,
        });
      if (claims && !(await claimMachine(db, row.machine_id))) {
        // The claim lost. If this very instance moved meanwhile (a concurrent start of it won),
        // decide again on its new state (a repeat is a no-op); otherwise someone else holds it.
        const now2 = await repo.instanceStatus(db, id);
        if (
          !now2 ||
          now2.destroyed_at !== null ||
          now2.intended_status !== row.intended_status ||
          now2.actual_status !== row.actual_status
        )
          throw new LostRace(`state of instance ${id}`);
        const m = await repo.machineDeletedAt(db, row.machine_id);
        if (!m || m.deleted_at !== null)
          throw InstanceErrors.machineUnavailable(
            'The machine was removed by its host; destroy this instance and rent another offer',
          );
        throw InstanceErrors.machineUnavailable();
      }
      // An on-demand start outranks a bid that holds the machine: the claim took it, the bid yields.
      if (claims) {
        const m = await machineOf(db, row.machine_id);
        await preemptForClaim(db, deps.config, m, m.host_id === row.user_id ? 'owner' : 'on-demand', now);
      }
      const moved = await repo.moveInstance(
        db,
        id,
        { intended: s.intended, actual: s.actual },
        {
          actual_status: d.next.actual,
          intended_status: d.next.intended,
          status_msg: want === 'stopped' ? 'Stopped on request' : 'Start requested',
        },
      );
      if (!moved) throw new LostRace(`state of instance ${id}`);
      // This instance was the machine's active one (it held `rented`): free the machine.
      if (releases) {
        await releaseMachine(db, row.machine_id);
        // Priority returns to the best waiting bid, if any.
        await arbitrate(db, deps.config, row.machine_id, now);
      }
      if (d.next.actual !== s.actual)
        await recordEvent(
          db,
          now,
          instanceEvent(row, s.actual, d.next.actual, {
            intended_status: d.next.intended,
            status_msg: want === 'stopped' ? 'Stopped on request' : 'Start requested',
          }),
        );
      return { changed: true };
    });
    // The machine's agent carries the change out now, not at its next heartbeat.
    if (r.changed && machineId !== null) deps.agentWake.notify([machineId]);
    return r;
  } catch (err) {
    // The partial unique index "one active instance per machine" refused the start: the flag
    // and the index never disagree in normal operation, but the index has the last word.
    if (isUniqueViolation(err)) throw InstanceErrors.machineUnavailable();
    throw err;
  }
}

export async function setLabel(deps: Deps, auth: AuthContext, id: number, label: string): Promise<void> {
  if (label.length > 1024) throw InstanceErrors.badRequest('label must be at most 1024 characters');
  assertPlainText('label', label);
  if (!(await repo.updateOwnLiveInstance(deps.db, auth.user.id, id, { label }))) {
    const row = await ownRow(deps.db, auth, id);
    if (row.destroyed_at !== null) throw destroyedError(id);
  }
}

/**
 * DELETE: destroys from any state; all billing stops (settled up to now), the machine is free
 * to rent again (if this instance held it), and the instance key is revoked. Destroying a destroyed instance is a success.
 */
export async function destroyInstance(
  deps: Deps,
  auth: AuthContext,
  id: number,
): Promise<{ changed: boolean }> {
  const now = deps.clock.now();
  let machineId: number | null = null;
  const r = await txRetry(deps.store, async (db) => {
    const row = await ownRow(db, auth, id);
    if (row.destroyed_at !== null) return { changed: false };
    machineId = row.machine_id;
    await destroyLiveRow(db, row, now, deps.config);
    return { changed: true };
  });
  // The machine's agent removes the instance now, not at its next heartbeat.
  if (r.changed && machineId !== null) deps.agentWake.notify([machineId]);
  return r;
}

/**
 * Destroys a live instance read in this transaction: settles its billing, sets destroyed_at,
 * frees the machine if the instance held it, gives back its disk, revokes its key, drops its copy
 * of the account's environment and records instance.destroyed. Throws LostRace when the row moved
 * since it was read (the caller's txRetry decides again). A host's deletion of the machine the
 * instance is on destroys it this way too.
 */
export async function destroyLiveRow(
  db: Kysely<DB>,
  row: InstanceRow,
  now: number,
  market?: MarketConfig,
): Promise<void> {
  const id = row.id;
  await settleInstance(db, row, now);
  // DELETE-like claim: only one destroyer sets destroyed_at; conditional on the intended status
  // read, so whether this instance holds the machine is known for sure (a concurrent start or
  // stop makes this a LostRace, decided again).
  const moved = await repo.moveInstance(
    db,
    id,
    { intended: row.intended_status },
    { destroyed_at: now, status_msg: 'Destroyed' },
  );
  if (!moved) throw new LostRace(`destroy of instance ${id}`);
  // What is left of a prepaid deposit goes back to the balance (settled above, refunded once).
  await refundDeposit(db, id, now);
  // Only the active instance holds `rented`: destroying a stopped one must not free a machine
  // that another client's active instance holds. Its disk is freed either way.
  if (row.intended_status !== 'stopped') {
    await releaseMachine(db, row.machine_id);
    // Priority returns to the best waiting bid, if any (a host deleting the machine gives none).
    if (market) await arbitrate(db, market, row.machine_id, now);
  }
  await holdDisk(db, row.machine_id, -diskMb(row.disk));
  await repo.revokeInstanceKey(db, id, now);
  // A destroyed instance keeps no copy of its account's environment variables.
  await dropInstanceEnv(db, id);
  await recordEvent(db, now, {
    ...instanceEvent(row, statusOf(row).actual, null, { status_msg: 'Destroyed' }),
    type: 'instance.destroyed',
  });
}

export interface BulkResult {
  id: number;
  success: boolean;
  error?: string;
  msg?: string;
}

/**
 * Applies `fn` to each distinct id. The reply's `msg` sums it up in a sentence, naming up to five failures:
 * the official CLI prints `msg` when `success` is false, and retries the whole request when
 * there is none.
 */
async function bulk(
  ids: number[],
  done: string,
  fn: (id: number) => Promise<unknown>,
): Promise<{ success: boolean; msg: string; results: BulkResult[] }> {
  const results: BulkResult[] = [];
  for (const id of [...new Set(ids)]) {
    try {
      await fn(id);
      results.push({ id, success: true });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      results.push({ id, success: false, error: err.code, msg: err.message });
    }
  }
  const failed = results.filter((r) => !r.success);
  const ok = results.length - failed.length;
  const summary = `${ok} of ${results.length} instance${results.length === 1 ? '' : 's'} ${done}`;
  const msg =
    failed.length === 0
      ? summary
      : `${summary}; ${failed
          .slice(0, 5)
          .map((r) => `${r.id}: ${r.msg}`)
          .join('; ')}${failed.length > 5 ? `; and ${failed.length - 5} more failed` : ''}`;
  return { success: failed.length === 0, msg, results };
}

export function checkIds(name: string, ids: unknown): number[] {
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > 1000 ||
    !ids.every((x) => Number.isSafeInteger(x) && (x as number) > 0)
  ) {
    throw InstanceErrors.badRequest(`${name} must be a non-empty array of at most 1000 instance ids`);
  }
  return ids as number[];
}

export const bulkChangeState = (deps: Deps, auth: AuthContext, ids: number[], want: IntendedStatus) =>
  bulk(ids, want === 'stopped' ? 'stopped' : 'started', (id) => changeState(deps, auth, id, want));
export const bulkDestroy = (deps: Deps, auth: AuthContext, ids: number[]) =>
  bulk(ids, 'destroyed', (id) => destroyInstance(deps, auth, id));

/**
 * The OpenSSH public key lines one live instance of the caller accepts (what its host writes to
 * its authorized_keys): `openrig ssh` picks the private key that matches one of them.
 */
export async function instanceSshKeys(deps: Deps, auth: AuthContext, id: number): Promise<string[]> {
  const row = await ownRow(deps.db, auth, id);
  if (row.destroyed_at !== null) throw destroyedError(id);
  return repo.authorizedKeys(deps.db, id);
}

/**
 * Attaches an SSH key to one live instance: it opens that instance only. One of the account's
 * keys is linked as it is; any other key is stored for this instance alone and never joins the
 * account's key list, so a caller scoped to instances cannot add keys to the account through
 * here. Repeats are harmless.
 */
export async function attachSshKey(
  deps: Deps,
  auth: AuthContext,
  id: number,
  raw: unknown,
): Promise<{ key_id: number }> {
  const key = parseOrThrow(raw);
  const row = await ownRow(deps.db, auth, id);
  if (row.destroyed_at !== null) throw destroyedError(id);
  const now = deps.clock.now();
  return tx(deps.store, async (db) => {
    const found =
      (await findAccountKey(db, auth.user.id, key.fingerprint)) ??
      (await findInstanceOnlyKey(db, id, key.fingerprint)) ??
      (await insertSshKey(db, {
        user_id: auth.user.id,
        public_key: key.publicKey,
        key_type: key.type,
        fingerprint: key.fingerprint,
        comment: key.comment,
        created_at: now,
        instance_id: id,
      }));
    await repo.attachKeys(
      db,
      id,
      [{ ssh_key_id: found.id, public_key: found.public_key, fingerprint: found.fingerprint }],
      now,
    );
    return { key_id: found.id };
  });
}

/**
 * Detaches a key from one instance: the agent's next sync no longer lists it for that instance.
 * The account's keys are unchanged; a key that belonged to this instance alone is deleted.
 */
export async function detachSshKey(deps: Deps, auth: AuthContext, id: number, keyId: number): Promise<void> {
  const row = await ownRow(deps.db, auth, id);
  if (row.destroyed_at !== null) throw destroyedError(id);
  const now = deps.clock.now();
  await tx(deps.store, async (db) => {
    if (!(await repo.detachKey(db, id, keyId)))
      throw InstanceErrors.notFound(`SSH key ${keyId} is not attached to instance ${id}`);
    await deleteInstanceOnlyKey(db, id, keyId, now);
  });
}

/** PUT /instances/{id}/: a state change and/or a label. */
export interface StateChange {
  state?: string;
  label?: string;
}

/**
 * Applies a PUT of one instance: the state change first (when it is refused, the label is left
 * alone too), then the label. An instance key may change the state only. Returns the reply text.
 */
export async function updateInstance(
  deps: Deps,
  auth: AuthContext,
  id: number,
  b: StateChange,
): Promise<string> {
  if (b.state === undefined && b.label === undefined)
    throw InstanceErrors.badRequest('Give state ("stopped" or "running") or label');
  if (b.state !== undefined && !isIntendedStatus(b.state))
    throw InstanceErrors.badRequest(`state must be "stopped" or "running", not ${quoteValue(b.state)}`);
  if (b.label !== undefined && auth.via === 'instance_key')
    throw new AppError(
      403,
      'forbidden',
      'An instance API key can only start, stop or destroy its own instance',
      {
        success: false,
      },
    );
  if (b.label !== undefined && b.label.length > 1024)
    throw InstanceErrors.badRequest('label must be at most 1024 characters');
  let msg = `Instance ${id} labelled`;
  if (b.state !== undefined) {
    const r = await changeState(deps, auth, id, b.state);
    msg = r.changed
      ? `Instance ${id} ${b.state === 'stopped' ? 'stopped' : 'starting'}`
      : `Instance ${id} is already ${b.state === 'stopped' ? 'stopped' : 'running or starting'}`;
  }
  if (b.label !== undefined) await setLabel(deps, auth, id, b.label);
  return msg;
}
