// Copies (docs/data.md). Between instances: the renter must own both ends and both must run;
// into a volume (V.ID): the volume's agent writes it, on the host when the source is on it too;
// the copy is recorded with a one-time key and the source's agent is woken, which pushes with
// rsync over SSH to the destination instance's SSH server (user vastai_kaalia), whose agent asks
// the server to confirm the key (copyAuth) and takes it once. The source's agent reports progress
// and the end (agentCopies): written to the copy, to the destination instance's status_msg and
// as webhook events (copy.started, copy.completed, copy.failed, copy.canceled). A laptop's side
// (rsync): the server only checks and answers where the instance's SSH server is; the CLI runs
// rsync itself with the renter's own key.
import { createHash } from 'node:crypto';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { tx, isUniqueViolation } from '../../db/connection.js';
import { encryptSecret, decryptSecret } from '../../crypto.js';
import { ed25519KeyPair } from '../../../contract/ssh-keygen.js';
import { recordEvent, recordEvents, type NewEvent } from '../webhooks/webhooks.events.js';
import { setInstanceFields } from '../instances/instances.moves.js';
import { CopyErrors } from './copies.errors.js';
import * as repo from './copies.repo.js';
import { cloneEnded, cloneProgress } from '../volumes/volumes.clone-status.js';

/** One end of a copy as the client named it. */
export type CopyEnd = { kind: 'local' } | { kind: 'instance'; id: number } | { kind: 'volume'; id: number };

/**
 * Reads an id as the official CLI sends it: a number, `"12"`, `"C.12"` (an instance), `"V.7"` (a
 * volume), or null / `"local"` (the client's own machine). Anything else is refused, naming it.
 */
export function parseEnd(v: unknown, field: string): CopyEnd {
  if (v === null || v === undefined || v === 'local') return { kind: 'local' };
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return { kind: 'instance', id: v };
  if (typeof v === 'string') {
    const s = v.trim();
    let m = /^(?:C\.)?([1-9]\d{0,15})$/i.exec(s);
    if (m) return { kind: 'instance', id: Number(m[1]) };
    m = /^V\.([1-9]\d{0,15})$/i.exec(s);
    if (m) return { kind: 'volume', id: Number(m[1]) };
    if (/^[a-z0-9]+(\.\d+)?$/i.test(s))
      throw CopyErrors.badRequest(
        `${field}: ${s} is not an instance (ID or C.ID), a volume (V.ID) or local; openrig has no cloud storage copies`,
      );
  }
  throw CopyErrors.badRequest(`${field}: expected an instance id (ID or C.ID), V.ID or local`);
}

/**
 * A path of a copy: absolute inside the instance (a relative one is taken from `/`), no NUL, no
 * `..` component. The trailing slash is kept (rsync: `dir/` copies what dir holds).
 */
export function copyPath(v: unknown, field: string, local = false): string {
  if (v === undefined || v === null || v === '') return local ? '.' : '/';
  if (typeof v !== 'string') throw CopyErrors.badRequest(`${field} must be a string`);
  if (v.includes('\0') || /[\r\n]/.test(v)) throw CopyErrors.badRequest(`${field} holds a control character`);
  if (v.split('/').includes('..')) throw CopyErrors.badRequest(`${field} may not contain a .. component`);
  if (local) return v;
  const p = v.startsWith('/') ? v : `/${v}`;
  return p.replace(/\/{2,}/g, '/');
}

function excludesOf(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '' || /[\0\r\n]/.test(x)))
    throw CopyErrors.badRequest('exclude must be a list of rsync patterns (one line each)');
  return v as string[];
}

export interface CopyBody {
  src_id?: unknown;
  dst_id?: unknown;
  src_path?: unknown;
  dst_path?: unknown;
  exclude?: unknown;
}

async function ownRunningInstance(deps: Deps, auth: AuthContext, id: number, side: string) {
  const row = await repo.instanceEnd(deps.db, id);
  if (!row || row.user_id !== auth.user.id) throw CopyErrors.notFound(`No such instance: ${id} (${side})`);
  if (row.actual_status !== 'running' || row.intended_status !== 'running' || row.ssh_port === null)
    throw CopyErrors.notRunning(`Instance ${id} (${side}) is not running: start it first`);
  if (row.online_state !== 'online')
    throw CopyErrors.notRunning(`The machine of instance ${id} (${side}) is offline`);
  return row;
}

/** SHA-256 (hex) of an OpenSSH public key's blob, from its line or its base64 blob. */
export function keyFingerprint(publicKey: string): string {
  const b64 = publicKey.trim().split(/\s+/).length > 1 ? publicKey.trim().split(/\s+/)[1]! : publicKey.trim();
  return createHash('sha256').update(Buffer.from(b64, 'base64')).digest('hex');
}

interface CopyEnds {
  id: number;
  user_id: number;
  src_kind: string;
  src_id: number;
  dst_kind: string;
  dst_id: number;
}

function copyEvent(
  type: 'copy.started' | 'copy.completed' | 'copy.failed' | 'copy.canceled',
  c: CopyEnds,
  extra: Record<string, unknown> = {},
): NewEvent {
  const intoVolume = c.dst_kind === 'volume';
  return {
    userId: c.user_id,
    type,
    subject: `${intoVolume ? 'volume' : 'instance'}:${c.dst_id}`,
    data: {
      copy_id: c.id,
      src_id: c.src_kind === 'volume' ? `V.${c.src_id}` : c.src_id,
      dst_id: intoVolume ? `V.${c.dst_id}` : c.dst_id,
      ...extra,
    },
  };
}

const srcName = (kind: string, id: number, p: string) => `${kind === 'volume' ? `V.${id}` : id}:${p}`;

/** A copy's progress or end, on the destination instance's status_msg (a volume has none). */
async function destinationStatus(
  db: Deps['db'],
  c: { dst_kind: string; dst_id: number },
  msg: string,
): Promise<void> {
  if (c.dst_kind !== 'instance') return;
  await setInstanceFields(db, c.dst_id, { status_msg: msg.slice(0, 500) }, { actual: 'running' });
}

/**
 * The machine a copy into volume `id` writes on: the volume's own. Its agent writes it on the host
 * when the source is on the same agent, else receives it on an SSH server it opens for the copy.
 */
async function destinationVolume(deps: Deps, auth: AuthContext, id: number): Promise<number> {
  const v = await repo.volumeEnd(deps.db, id);
  if (!v || v.user_id !== auth.user.id) throw CopyErrors.notFound(`No such volume: ${id} (destination)`);
  if (v.status !== 'ready') throw CopyErrors.notRunning(`Volume ${id} is not ready`);
  if (v.online_state !== 'online') throw CopyErrors.notRunning(`The machine of volume ${id} is offline`);
  return v.machine_id;
}

/** `copy` (PUT /commands/copy_direct/, and /commands/rsync/ when one side is local). */
export async function startCopy(
  deps: Deps,
  auth: AuthContext,
  body: CopyBody,
): Promise<Record<string, unknown>> {
  const src = parseEnd(body.src_id, 'src_id');
  const dst = parseEnd(body.dst_id, 'dst_id');
  const exclude = excludesOf(body.exclude);
  if (src.kind === 'local' || dst.kind === 'local') return rsyncEndpoint(deps, auth, src, dst, body, exclude);
  const srcPath = copyPath(body.src_path, 'src_path');
  const dstPath = copyPath(body.dst_path, 'dst_path');
  if (src.kind === dst.kind && src.id === dst.id)
    throw CopyErrors.badRequest(`the source and the destination are the same ${src.kind}`);
  let srcMachine: number;
  if (src.kind === 'volume') {
    const v = await repo.volumeEnd(deps.db, src.id);
    if (!v || v.user_id !== auth.user.id) throw CopyErrors.notFound(`No such volume: ${src.id}`);
    if (v.status !== 'ready') throw CopyErrors.notRunning(`Volume ${src.id} is not ready`);
    if (v.online_state !== 'online')
      throw CopyErrors.notRunning(`The machine of volume ${src.id} is offline`);
    srcMachine = v.machine_id;
  } else srcMachine = (await ownRunningInstance(deps, auth, src.id, 'source')).machine_id;
  const dstMachine =
    dst.kind === 'volume'
      ? await destinationVolume(deps, auth, dst.id)
      : (await ownRunningInstance(deps, auth, dst.id, 'destination')).machine_id;
  const ends = { src_kind: src.kind, src_id: src.id, dst_kind: dst.kind, dst_id: dst.id };
  const now = deps.clock.now();
  const kp = ed25519KeyPair(`openrig-copy`);
  let id: number;
  try {
    id = await tx(deps.store, async (trx) => {
      const newId = await repo.insertCopy(trx, {
        user_id: auth.user.id,
        src_kind: src.kind,
        src_id: src.id,
        src_machine_id: srcMachine,
        src_path: srcPath,
        dst_kind: dst.kind,
        dst_id: dst.id,
        dst_machine_id: dstMachine,
        dst_path: dstPath,
        excludes: JSON.stringify(exclude),
        key_enc: encryptSecret(deps.config.secretKey, kp.private),
        key_fp: keyFingerprint(kp.public),
        created_at: now,
      });
      await destinationStatus(trx, ends, `copy from ${srcName(src.kind, src.id, srcPath)} queued`);
      await recordEvent(
        trx,
        now,
        copyEvent(
          'copy.started',
          { id: newId, user_id: auth.user.id, ...ends },
          { src_path: srcPath, dst_path: dstPath },
        ),
      );
      return newId;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw CopyErrors.busy();
    throw err;
  }
  deps.agentWake.notify([srcMachine]);
  return { success: true, msg: `copy ${id} started`, copy_id: id };
}

/** The laptop side: where the instance's SSH server is, for the client's own rsync. */
async function rsyncEndpoint(
  deps: Deps,
  auth: AuthContext,
  src: CopyEnd,
  dst: CopyEnd,
  body: CopyBody,
  exclude: string[],
): Promise<Record<string, unknown>> {
  if (src.kind === 'local' && dst.kind === 'local')
    throw CopyErrors.badRequest('one side of a copy must be an instance (ID:/path)');
  const upload = src.kind === 'local';
  const remote = upload ? dst : src;
  if (remote.kind === 'volume')
    throw CopyErrors.badRequest(
      'volumes are copied to and from a laptop through an instance that mounts them (ID:/mount/path)',
    );
  if (remote.kind !== 'instance') throw CopyErrors.badRequest('one side of a copy must be an instance');
  copyPath(upload ? body.dst_path : body.src_path, upload ? 'dst_path' : 'src_path');
  copyPath(upload ? body.src_path : body.dst_path, upload ? 'src_path' : 'dst_path', true);
  const row = await ownRunningInstance(deps, auth, remote.id, upload ? 'destination' : 'source');
  const addr = row.ssh_host ?? deps.config.publicHost;
  const port = row.ssh_port!;
  return {
    success: true,
    ...(upload ? { dst_addr: addr, dst_port: port } : { src_addr: addr, src_port: port }),
    module: String(row.id),
    ...(exclude.length > 0 ? { exclude } : {}),
  };
}

/** `cancel copy DST` (DELETE /commands/copy_direct/). */
export async function cancelCopy(
  deps: Deps,
  auth: AuthContext,
  body: { dst_id?: unknown },
): Promise<{ success: boolean; msg: string; canceled: number }> {
  const raw = typeof body.dst_id === 'string' ? body.dst_id.replace(/:.*$/s, '') : body.dst_id;
  const dst = parseEnd(raw, 'dst_id');
  if (dst.kind === 'local')
    throw CopyErrors.badRequest('dst_id: expected an instance id (ID or C.ID) or V.ID');
  const now = deps.clock.now();
  const rows = await tx(deps.store, async (trx) => {
    const ended = await repo.cancelCopies(trx, auth.user.id, dst.kind, dst.id, now);
    if (ended.length > 0) {
      await destinationStatus(trx, { dst_kind: dst.kind, dst_id: dst.id }, 'copy canceled');
      await recordEvents(
        trx,
        now,
        ended.map((c) =>
          copyEvent('copy.canceled', {
            id: Number(c.id),
            user_id: auth.user.id,
            src_kind: c.src_kind,
            src_id: Number(c.src_id),
            dst_kind: c.dst_kind,
            dst_id: Number(c.dst_id),
          }),
        ),
      );
    }
    return ended;
  });
  if (rows.length === 0)
    return {
      success: false,
      msg: `No copy into ${dst.kind === 'volume' ? `volume V.${dst.id}` : `instance ${dst.id}`} is under way`,
      canceled: 0,
    };
  deps.agentWake.notify([...new Set(rows.map((r) => Number(r.src_machine_id)))]);
  return {
    success: true,
    msg: `canceled ${rows.length} cop${rows.length === 1 ? 'y' : 'ies'}`,
    canceled: rows.length,
  };
}

export async function listCopies(deps: Deps, auth: AuthContext) {
  const rows = await repo.copiesOf(deps.db, auth.user.id);
  return rows.map((r) => ({
    id: Number(r.id),
    src_id: r.src_kind === 'volume' ? `V.${r.src_id}` : String(r.src_id),
    src_path: r.src_path,
    dst_kind: r.dst_kind as 'instance' | 'volume',
    dst_id: Number(r.dst_id),
    dst_path: r.dst_path,
    status: r.status as 'queued' | 'running' | 'done' | 'failed' | 'canceled',
    progress: r.progress,
    bytes: r.bytes === null ? null : Number(r.bytes),
    msg: r.msg,
    created_at: Number(r.created_at) / 1000,
    ended_at: r.ended_at === null ? null : Number(r.ended_at) / 1000,
  }));
}

export interface AgentCopyReport {
  id: number;
  state: 'running' | 'done' | 'failed';
  progress?: string;
  bytes?: number;
  msg?: string;
}

/**
 * A source agent's copies: its reports applied (conditional writes: an ended copy stays ended),
 * then the active copies of its machines, each with its one-time key.
 */
export async function agentCopies(
  deps: Deps,
  auth: AuthContext,
  body: {
    agent_uid: string;
    machine_ids: number[];
    reports: AgentCopyReport[];
    receiving?: { id: number; port: number }[];
  },
) {
  const now = deps.clock.now();
  const mine = await repo.agentMachines(deps.db, auth.user.id, body.agent_uid, [
    ...new Set(body.machine_ids),
  ]);
  // The SSH servers this agent opened for the clones it receives: their sources' agents push there.
  const woken: number[] = [];
  for (const r of body.receiving ?? []) {
    const src = await repo.setClonePort(deps.db, mine, r.id, r.port);
    if (src !== null) woken.push(src);
  }
  if (woken.length > 0) deps.agentWake.notify([...new Set(woken)]);
  const rows = await repo.copiesByIds(
    deps.db,
    mine,
    body.reports.map((r) => r.id),
  );
  const byId = new Map(rows.map((r) => [Number(r.id), r]));
  for (const rep of body.reports) {
    const c = byId.get(rep.id);
    if (!c || c.ended_at !== null) continue;
    const ev = {
      id: Number(c.id),
      user_id: Number(c.user_id),
      src_kind: c.src_kind,
      src_id: Number(c.src_id),
      dst_kind: c.dst_kind,
      dst_id: Number(c.dst_id),
    };
    const from = srcName(c.src_kind, ev.src_id, c.src_path);
    const bytes = rep.bytes ?? null;
    if (rep.state === 'running') {
      const progress = (rep.progress ?? '').slice(0, 300);
      if (c.status === 'queued') await repo.markRunning(deps.db, ev.id, now, progress);
      else if (progress !== c.progress) await repo.setProgress(deps.db, ev.id, progress, bytes);
      if (progress !== c.progress || c.status === 'queued') {
        await destinationStatus(deps.db, ev, `copying from ${from}${progress ? `: ${progress}` : ''}`);
        if (ev.dst_kind === 'volume') await cloneProgress(deps.db, ev.dst_id, progress);
      }
      continue;
    }
    const msg = (rep.msg ?? '').slice(0, 2000);
    await tx(deps.store, async (trx) => {
      if (!(await repo.endCopy(trx, ev.id, rep.state === 'done' ? 'done' : 'failed', msg, bytes, now)))
        return;
      const statusMsg =
        rep.state === 'done'
          ? `copy from ${from} done${bytes !== null ? ` (${bytes} bytes)` : ''}`
          : `copy from ${from} failed: ${msg}`;
      await destinationStatus(trx, ev, statusMsg);
      if (ev.dst_kind === 'volume') await cloneEnded(trx, ev.dst_id, rep.state === 'done' ? null : msg);
      await recordEvent(
        trx,
        now,
        copyEvent(rep.state === 'done' ? 'copy.completed' : 'copy.failed', ev, {
          ...(bytes !== null ? { bytes } : {}),
          ...(rep.state === 'failed' ? { msg } : {}),
        }),
      );
    });
  }
  const active = await repo.activeCopiesFrom(deps.db, mine);
  const copies = [];
  for (const c of active) {
    const key = decryptSecret(deps.config.secretKey, c.key_enc);
    if (key === null) continue;
    const intoVolume = c.dst_kind === 'volume';
    // A volume of this agent is written by it on the host; another agent's (a clone) through the
    // SSH server that agent opened for it (not listed until it did); an instance through its own.
    const local = intoVolume && mine.includes(Number(c.dst_machine_id));
    if (intoVolume ? (local ? c.dst_size_gb === null : c.dst_port === null) : c.ssh_port === null) continue;
    copies.push({
      id: Number(c.id),
      status: c.status,
      src_kind: c.src_kind as 'instance' | 'volume',
      src_id: Number(c.src_id),
      src_path: c.src_path,
      dst_kind: intoVolume ? ('volume' as const) : ('instance' as const),
      dst_id: Number(c.dst_id),
      dst_path: c.dst_path,
      dst_host: local ? '' : ((intoVolume ? c.dst_public_host : c.ssh_host) ?? deps.config.publicHost),
      dst_port: local ? 0 : Number(intoVolume ? c.dst_port : c.ssh_port),
      ...(intoVolume ? { dst_size_gb: Number(c.dst_size_gb) } : {}),
      ...(Number(c.compress) === 1 ? { compress: true } : {}),
      excludes: JSON.parse(c.excludes) as string[],
      key,
    });
  }
  const receives = (await repo.activeClonesInto(deps.db, mine)).map((r) => ({
    id: Number(r.id),
    volume_id: Number(r.dst_id),
    size_gb: Number(r.size_gb),
  }));
  return { success: true, copies, receives };
}

/**
 * A destination's SSH server asks whether a key is the one-time key of a copy into the instance
 * (or of a clone into the volume its agent receives); with `consume`, the login that takes it
 * (once) is told yes, every later one no.
 */
export async function copyAuth(
  deps: Deps,
  auth: AuthContext,
  body: { instance_id?: number; volume_id?: number; public_key: string; consume?: boolean },
): Promise<{ ok: boolean; copy_id: number | null }> {
  // A key asked about for no destination, or for two, is no copy's key.
  if ((body.instance_id === undefined) === (body.volume_id === undefined))
    return { ok: false, copy_id: null };
  const dst =
    body.instance_id !== undefined
      ? { kind: 'instance' as const, id: body.instance_id }
      : { kind: 'volume' as const, id: body.volume_id! };
  const fp = keyFingerprint(body.public_key);
  const c = await repo.copyForKey(deps.db, auth.user.id, dst, fp);
  if (!c || c.key_used_at !== null) return { ok: false, copy_id: null };
  if (body.consume && !(await repo.takeKey(deps.db, Number(c.id), deps.clock.now())))
    return { ok: false, copy_id: null };
  return { ok: true, copy_id: Number(c.id) };
}
