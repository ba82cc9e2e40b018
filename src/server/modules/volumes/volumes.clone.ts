// Cloning a volume (`clone volume SRC DST_OFFER [-s GB] [-d]`, POST /volumes/copy/, docs/volumes.md):
// a new volume made from a volume offer, on that offer's machine, and a copy of the source's files
// into it, carried out by the copies machinery (copies.service.ts, the agents' copy-runner.ts). The
// new volume's status is `cloning`, then `cloning N%` as the source's agent reports, and `ready`
// once copied; a failed copy leaves it `clone failed: why`, never ready (its owner deletes it). A
// clone on the same machine (or another machine of the same agent) is copied on the host; into
// another agent's machine, that agent opens an SSH server for it and the source's agent pushes
// with rsync over SSH and the clone's one-time key. The new volume is charged from its creation.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { tx } from '../../db/connection.js';
import { balanceOf } from '../billing/billing.service.js';
import { cloneSource, recordClone } from '../copies/copies.clones.js';
import { VolumeErrors } from './volumes.errors.js';
import * as repo from './volumes.repo.js';
import { makeVolume } from './volumes.service.js';

export interface CloneBody {
  src_id: number;
  dst_id: number;
  size?: number;
  disable_compression?: boolean;
}

export async function cloneVolume(
  deps: Deps,
  auth: AuthContext,
  body: CloneBody,
): Promise<{ msg: string; volume_id: number; copy_id: number }> {
  if (body.size !== undefined && !Number.isInteger(body.size))
    throw VolumeErrors.badRequest(`size must be whole GB, not ${body.size}`);
  const userId = auth.user.id;
  const now = deps.clock.now();
  const r = await tx(deps.store, async (db) => {
    const src = await cloneSource(db, body.src_id);
    if (!src || src.user_id !== userId) throw VolumeErrors.notFound(`No volume ${body.src_id} of yours`);
    if (src.status !== 'ready')
      throw VolumeErrors.conflict(
        `Volume ${body.src_id} is not ready (${src.status}): a volume is cloned once it is ready`,
      );
    if (src.online_state !== 'online')
      throw VolumeErrors.conflict(`The machine of volume ${body.src_id} (${src.machine_id}) is offline`);
    const locked = await repo.lockReadyVolume(db, userId, body.src_id);
    if (!locked) throw VolumeErrors.conflict(`Volume ${body.src_id} was deleted or changed meanwhile`);
    const srcSize = Number(locked.size_gb);
    const size = body.size ?? srcSize;
    if (size < srcSize)
      throw VolumeErrors.badRequest(
        `size ${size} GB is less than the ${srcSize} GB of volume ${body.src_id}`,
      );
    if ((await balanceOf(db, userId)) <= 0) throw VolumeErrors.insufficientBalance();
    const label = locked.label;
    const v = await makeVolume(db, { userId, askId: body.dst_id, size, label, now, status: repo.CLONING });
    const copyId = await recordClone(db, deps, {
      userId,
      srcId: body.src_id,
      srcMachine: src.machine_id,
      dstId: v.id,
      dstMachine: v.machineId,
      compress: body.disable_compression !== true,
      now,
    });
    return { volumeId: v.id, machineId: v.machineId, srcMachine: src.machine_id, copyId, size };
  });
  deps.agentWake.notify([...new Set([r.srcMachine, r.machineId])]);
  return {
    msg: `Cloning volume ${body.src_id} into volume ${r.volumeId} (${r.size} GB on machine ${r.machineId}): show volumes shows its progress, ready once copied`,
    volume_id: r.volumeId,
    copy_id: r.copyId,
  };
}
