// An instance's volume, from the create body's `volume_info` (the official CLI's
// `create instance … --create-volume ASK --volume-size N --mount-path P [--volume-label L]` and
// `--link-volume VOL --mount-path P`):
//   {"mount_path": P, "create_new": bool, "volume_id": ASK or VOL, "size"?: N, "name"?: L}
// Checked before anything is written (parseVolumeInfo: a 400 naming the field), then applied in
// the create's transaction (linkVolume): a new volume is made from the volume offer, or the
// caller's volume is mounted; either way on the instance's own machine (else a 400 naming both),
// and a volume is mounted by at most one live instance (decided by the database: volumes.repo.ts).
// A field of volume_info openrig does not know is refused, never ignored.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { DEFAULT_VOLUME_GB, MAX_VOLUME_GB } from '../../../contract/schemas/volumes.js';
import { VolumeErrors } from './volumes.errors.js';
import * as repo from './volumes.repo.js';
import { makeVolume, volumeLabel } from './volumes.service.js';

export interface VolumeLink {
  mountPath: string;
  createNew: boolean;
  /** The volume offer (create_new) or the volume. */
  volumeId: number;
  /** GB of a new volume. */
  size: number;
  label: string;
}

const KNOWN = new Set(['mount_path', 'create_new', 'volume_id', 'size', 'name']);
const bad = (msg: string) => VolumeErrors.badRequest(msg);

/** A mount path: absolute, no `..` segment, not `/`, printable, at most 255 characters. */
export function checkMountPath(v: unknown): string {
  const f = 'volume_info.mount_path';
  if (typeof v !== 'string' || v === '')
    throw bad(`${f} is required: an absolute path in the container such as /data`);
  if (v.length > 255) throw bad(`${f} must be at most 255 characters`);
  if (!v.startsWith('/')) throw bad(`${f} must be an absolute path (start with /)`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f:,]/.test(v)) throw bad(`${f} must not hold control characters, ":" or ","`);
  const parts = v.split('/').filter((p) => p !== '');
  if (parts.some((p) => p === '..')) throw bad(`${f} must not contain a ".." segment`);
  if (parts.filter((p) => p !== '.').length === 0) throw bad(`${f} must not be / (the container's root)`);
  return `/${parts.filter((p) => p !== '.').join('/')}`;
}

/** The body's volume_info, checked; null when it has none (absent or null). */
export function parseVolumeInfo(body: unknown): VolumeLink | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const raw = (body as Record<string, unknown>).volume_info;
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw bad('volume_info must be an object {mount_path, create_new, volume_id, size?, name?}');
  const vi = raw as Record<string, unknown>;
  const unknown = Object.keys(vi).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0)
    throw bad(
      `volume_info: unknown field ${unknown.map((k) => JSON.stringify(k.slice(0, 64))).join(', ')} (use mount_path, create_new, volume_id, size, name)`,
    );
  const mountPath = checkMountPath(vi.mount_path);
  if (vi.create_new !== undefined && vi.create_new !== null && typeof vi.create_new !== 'boolean')
    throw bad(
      'volume_info.create_new must be true (make a volume from a volume offer) or false (mount your volume)',
    );
  const createNew = vi.create_new === true;
  const id = vi.volume_id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1)
    throw bad(
      createNew
        ? 'volume_info.volume_id must be the volume offer to make the volume from (search volumes)'
        : 'volume_info.volume_id must be the id of your volume to mount (show volumes)',
    );
  let size = DEFAULT_VOLUME_GB;
  if (vi.size !== undefined && vi.size !== null) {
    if (!createNew)
      throw bad('volume_info.size applies only with create_new: a linked volume keeps its size');
    if (typeof vi.size !== 'number' || !Number.isInteger(vi.size) || vi.size < 1 || vi.size > MAX_VOLUME_GB)
      throw bad(`volume_info.size must be a whole number of GB from 1 to ${MAX_VOLUME_GB}`);
    size = vi.size;
  }
  if (vi.name !== undefined && vi.name !== null && !createNew)
    throw bad('volume_info.name applies only with create_new: a linked volume keeps its label');
  const label = volumeLabel('volume_info.name', vi.name);
  return { mountPath, createNew, volumeId: id, size, label };
}

/**
 * Applies a checked volume_info to a new instance, in the create's transaction: makes the volume
 * (create_new) or finds the caller's, checks it is on the instance's machine, and mounts it.
 */
export async function linkVolume(
  db: Kysely<DB>,
  link: VolumeLink | null,
  at: { userId: number; machineId: number; instanceId: number; now: number },
): Promise<void> {
  if (!link) return;
  let volumeId = link.volumeId;
  if (link.createNew) {
    volumeId = (
      await makeVolume(db, {
        userId: at.userId,
        askId: link.volumeId,
        size: link.size,
        label: link.label,
        now: at.now,
        machineId: at.machineId,
      })
    ).id;
  } else {
    const v = await repo.volumeById(db, volumeId);
    if (!v || Number(v.user_id) !== at.userId || v.deleted_at !== null)
      throw VolumeErrors.notFound(`volume_info.volume_id: no volume ${volumeId} of yours`);
    // A clone's volume is written by its copy until ready (a failed one never is).
    if (v.status !== 'ready')
      throw VolumeErrors.conflict(
        `volume_info.volume_id: volume ${volumeId} is not ready (${v.status}): a clone is mounted once copied`,
      );
    if (Number(v.machine_id) !== at.machineId)
      throw bad(
        `volume_info.volume_id: volume ${volumeId} is on machine ${Number(v.machine_id)}, the instance's offer is machine ${at.machineId}: a volume and its instance must be on the same machine`,
      );
  }
  const mounted = await repo.mountVolume(db, {
    id: volumeId,
    userId: at.userId,
    instanceId: at.instanceId,
    mountPath: link.mountPath,
  });
  if (!mounted) {
    const v = await repo.volumeById(db, volumeId);
    throw VolumeErrors.inUse(
      `volume_info.volume_id: volume ${volumeId} is mounted by live instance ${Number(v?.instance_id)}; a volume is mounted by one instance at a time`,
    );
  }
}
