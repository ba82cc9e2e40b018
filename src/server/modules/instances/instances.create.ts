// Creating an instance from an offer.
// Renting is decided by the database: the machine is claimed by a conditional
// UPDATE machines SET rented = 1 WHERE id = ? AND rented = 0 AND listed = 1 … (machines.repo.ts
// claimMachine, the same claim a start of a stopped instance makes), and the partial
// unique index "one active instance per machine" backs it. Of N concurrent creates on one offer
// (or creates racing a start of a stopped instance there) exactly one claims it; the others get
// 409 offer_unavailable. Stopped instances of earlier renters may stay on the machine: their
// disk is not free for the new one.
// Idempotency-Key: its row is inserted first in the same transaction, so a concurrent request
// with the same key waits on the unique index and then replays the first reply (same body) or
// gets 422 (other body). Keys live 24 hours.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { INSTANCE_KEY_PREFIX } from '../../identity.js';
import { tx, isUniqueViolation } from '../../db/connection.js';
import { decryptSecret, encryptSecret, newToken, sha256Hex } from '../../crypto.js';
import { diskDph } from '../billing/billing.meter.js';
import { InstanceErrors } from './instances.errors.js';
import { parseCreateBody } from '../instance-config/instance-config.parse.js';
import { instanceEvent, recordEvent } from '../webhooks/webhooks.events.js';
import { claimMachine, claimState, holdDisk } from '../machines/machines.service.js';
import { balanceOf } from '../billing/billing.service.js';
import * as repo from './instances.repo.js';
import { instanceBodyFrom, usableTemplate } from '../templates/templates.service.js';
import { snapshotForInstance } from '../env-vars/env-vars.service.js';
import { linkVolume, parseVolumeInfo } from '../volumes/volumes.link.js';
import { refuseSelfTestCreate } from '../compat/compat.self-test.js';
import { roundPrice } from '../../../contract/money.js';
import { lockOffer, placeBid, preemptForClaim } from './instances.market.js';
import { admitCreate, noteCreated } from '../quotas/quotas.service.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** An instance's disk as counted in machines.disk_held_mb (integer MB: exact sums). */
export function diskMb(gb: number): number {
  return Math.round(gb * 1000);
}

export interface CreateReply {
  success: true;
  new_contract: number;
  instance_api_key: string;
  is_bid: boolean;
  price: number | null;
  bid_waiting: boolean;
  msg: string;
}

/** Stable JSON (sorted keys) so the same body always hashes the same. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export function checkIdempotencyKey(raw: unknown): string | null {
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || raw.length < 1 || raw.length > 255 || !/^[\x21-\x7e]+$/.test(raw)) {
    throw InstanceErrors.badRequest('Idempotency-Key must be 1 to 255 visible ASCII characters');
  }
  return raw;
}

async function replay(deps: Deps, userId: number, key: string, hash: string): Promise<CreateReply | null> {
  const row = await repo.idempotencyRow(deps.db, userId, key);
  if (!row || row.created_at < deps.clock.now() - IDEMPOTENCY_TTL_MS) return null;
  if (row.request_hash !== hash) throw InstanceErrors.idempotencyMismatch();
  const plain = decryptSecret(deps.config.secretKey, row.response_enc);
  if (plain === null) throw new Error('idempotency reply unreadable');
  return JSON.parse(plain) as CreateReply;
}

/** The body's template_hash_id, or null when it names none (absent, null or ""). */
function templateHashOf(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const h = (body as Record<string, unknown>).template_hash_id;
  return h === undefined || h === null || h === '' ? null : h;
}

export async function createInstance(
  deps: Deps,
  auth: AuthContext,
  offerId: number,
  body: unknown,
  idemHeader: unknown,
): Promise<CreateReply> {
  refuseSelfTestCreate(body);
  const idemKey = checkIdempotencyKey(idemHeader);
  // With a template the body is checked once merged with it, inside the transaction; without,
  // at once. The request hash covers template_hash_id, and a hash_id names one version of a
  // template (an update gives a new one), so a retry means the same configuration.
  const templateHash = templateHashOf(body);
  const direct = templateHash === null ? parseCreateBody(body) : null;
  const volume = parseVolumeInfo(body);
  const hash = sha256Hex(canonicalJson({ offer: offerId, body }));
  const userId = auth.user.id;
  if (idemKey) {
    const done = await replay(deps, userId, idemKey, hash);
    if (done) return done;
  }
  const now = deps.clock.now();
  try {
    const created = await tx(deps.store, async (db) => {
      if (idemKey) {
        await repo.claimIdempotencyKey(db, { userId, key: idemKey, hash, now, ttlMs: IDEMPOTENCY_TTL_MS });
      }
      // The template is the caller's or a public one, read in this transaction; the merged body
      // passes the same checks as a direct request, so a template can add nothing a body could not.
      const tpl = templateHash === null ? null : await usableTemplate(db, userId, templateHash);
      const req =
        tpl === null ? direct! : parseCreateBody(instanceBodyFrom(tpl, body as Record<string, unknown>));
      const keys = await repo.liveSshKeys(db, userId);
      if (keys.length === 0) throw InstanceErrors.noSshKey();
      if ((await balanceOf(db, userId)) <= 0)
        throw InstanceErrors.insufficientBalance('Your balance is exhausted: add credit before renting');

      // The race for the offer is decided here, by the database (see the header comment). A bid
      // locks the machine and waits or wins by the market's rule (instances.market.ts); an
      // on-demand or owner rental claims it, preempting a bid that holds it.
      const bid = req.price === null ? null : roundPrice(req.price);
      const m = bid !== null ? await lockOffer(db, offerId, now) : await claimMachine(db, offerId, now);
      if (m && bid === null)
        await preemptForClaim(db, deps.config, m, m.host_id === userId ? 'owner' : 'on-demand', now);
      if (!m) {
        const ex = await claimState(db, offerId);
        if (!ex || ex.deleted_at !== null) throw InstanceErrors.offerNotFound(`No such offer: ${offerId}`);
        if (ex.rented === 1)
          throw InstanceErrors.offerUnavailable(`Offer ${offerId} is no longer available: it is rented`);
        if (ex.listed === 1)
          throw InstanceErrors.offerUnavailable(
            `Offer ${offerId} is no longer available: its host is offline or the listing ended`,
          );
        throw InstanceErrors.offerUnavailable(`Offer ${offerId} is no longer available: it is not listed`);
      }
      // Stopped instances of earlier renters keep their data on the host: their disk is taken.
      // (Read by the claim itself: no other create can run on this machine until we commit, and
      // a concurrent destroy only frees more.)
      const free = Math.max(0, m.disk_space - Math.max(0, Number(m.disk_held_mb)) / 1000);
      if (req.disk > free) {
        throw InstanceErrors.badRequest(
          free < m.disk_space
            ? `disk ${req.disk} GB exceeds the ${free} GB free on this offer (${m.disk_space} GB, of which stopped instances hold ${m.disk_space - free} GB)`
            : `disk ${req.disk} GB exceeds the ${m.disk_space} GB this offer has`,
        );
      }
      if (req.ports.length + 1 > m.direct_port_count) {
        throw InstanceErrors.badRequest(
          `${req.ports.length} port requests and SSH need ${req.ports.length + 1} direct ports; this offer has ${m.direct_port_count}`,
        );
      }
      // Atomic increment (never read-then-write); the destroy transaction takes it back.
      await holdDisk(db, m.id, diskMb(req.disk));
      let dphCompute = m.price_gpu_dph * m.num_gpus;
      if (bid !== null) {
        if (m.min_bid_dph <= 0)
          throw InstanceErrors.badRequest(`Offer ${offerId} takes no bids: rent it on demand (price null)`);
        if (bid < m.min_bid_dph)
          throw InstanceErrors.badRequest(
            `price ${bid} is below this offer's minimum bid of ${m.min_bid_dph} $/hour (the host's floor)`,
          );
        dphCompute = bid;
      }
      // Team, member and API key limits (quotas.service.ts): decided here, in this transaction.
      const dphDisk = diskDph(m.price_disk_gb_month, req.disk);
      const keyId = auth.originKeyId ?? auth.keyId;
      const memberId = auth.member?.userId ?? null;
      const ask = { teamId: auth.teamId, memberId, keyId, gpus: m.num_gpus, dph: dphCompute + dphDisk, now };
      await admitCreate(db, ask);
      // The restricted key: looked up by hash; the auth hook lets it start/stop/destroy this
      // instance only. It is also sealed (AES-GCM) on the instance so the agent can inject this
      // same key as CONTAINER_API_KEY (column from migration 005).
      const key = newToken(INSTANCE_KEY_PREFIX);
      const instanceId = await repo.insertInstance(db, {
        machine_id: m.id,
        user_id: userId,
        team_id: auth.teamId,
        image: req.image,
        disk: req.disk,
        onstart: req.onstart,
        env: JSON.stringify(req.rawEnv),
        label: req.label,
        runtype: req.runtype,
        args: req.args === null ? null : JSON.stringify(req.args),
        is_bid: bid !== null ? 1 : 0,
        dph_compute: dphCompute,
        dph_disk: dphDisk,
        // A bid is inserted waiting (no claim); the market makes it active when it wins.
        intended_status: bid !== null ? 'stopped' : 'running',
        bid_waiting: bid !== null ? 1 : 0,
        bid_at: bid !== null ? now : null,
        actual_status: null,
        status_msg: '',
        ssh_host: null,
        ssh_port: null,
        ports: '{}',
        start_date: now,
        created_at: now,
        destroyed_at: null,
        accrued_micros: 0,
        billed_until: now,
        image_login_enc:
          req.imageLogin === null ? null : encryptSecret(deps.config.secretKey, req.imageLogin),
        extra: req.extra,
        portal: JSON.stringify(req.portal),
        container_key_enc: encryptSecret(deps.config.secretKey, key),
        // Copied, so the instance row shows the template as it was rented from it.
        template_id: tpl?.id ?? null,
        template_name: tpl?.name ?? null,
        template_hash_id: tpl?.hash_id ?? null,
      });
      await noteCreated(db, { instanceId, keyId, teamId: auth.teamId, memberId, now });
      await repo.attachKeys(
        db,
        instanceId,
        keys.map((k) => ({ ssh_key_id: k.id, public_key: k.public_key, fingerprint: k.fingerprint })),
        now,
      );
      // The account's environment variables as they are now, read in this transaction: the
      // instance keeps this copy (encrypted) for its life; its own env wins at launch.
      await snapshotForInstance(db, deps.config.secretKey, userId, instanceId);
      // The body's volume_info: a volume made or linked on this machine, mounted by this instance.
      await linkVolume(db, volume, { userId, machineId: m.id, instanceId, now });
      await repo.insertInstanceKey(db, {
        userId,
        teamId: auth.teamId,
        instanceId,
        keyHash: sha256Hex(key),
        keyPrefix: key.slice(0, 10),
        now,
      });
      await recordEvent(db, now, {
        ...instanceEvent({ id: instanceId, user_id: userId, machine_id: m.id }, null, null, {
          intended_status: 'running',
        }),
        type: 'instance.created',
      });
      const market = bid === null ? null : await placeBid(db, deps.config, m.id, instanceId, now);
      const reply: CreateReply = {
        success: true,
        new_contract: instanceId,
        instance_api_key: key,
        is_bid: bid !== null,
        price: bid,
        bid_waiting: market?.waiting ?? false,
        msg: market?.msg ?? `Instance ${instanceId} created on demand at ${dphCompute} $/hour`,
      };
      if (idemKey)
        await repo.storeIdempotentReply(
          db,
          userId,
          idemKey,
          instanceId,
          encryptSecret(deps.config.secretKey, JSON.stringify(reply)),
        );
      return reply;
    });
    // The offer is the machine: its agent starts the instance now, not at its next heartbeat.
    deps.agentWake.notify([offerId]);
    return created;
  } catch (err) {
    // A concurrent request with the same Idempotency-Key committed first: answer as it did.
    if (idemKey && isUniqueViolation(err)) {
      const done = await replay(deps, userId, idemKey, hash);
      if (done) return done;
    }
    if (isUniqueViolation(err))
      throw InstanceErrors.offerUnavailable(`Offer ${offerId} is no longer available: it is rented`);
    throw err;
  }
}
