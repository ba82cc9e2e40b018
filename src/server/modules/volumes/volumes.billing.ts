// Charging volumes: storage_cost × GB per month (a month of 720 hours, as for instance disks),
// from creation to deletion, whether or not an instance mounts it; metered hourly by the billing
// loop (jobs/billing-meter.ts calls runVolumeMeter) and settled at deletion. Each charge is a
// ledger row of kind `volume` on the owner, and the owner's balance moves in the same
// transaction. A period is charged once: billed_until moves by a conditional UPDATE
// (… WHERE billed_until = <the value read>), so two meters or a meter and a delete never charge
// it twice.
// An owner whose balance is exhausted keeps the volume for VOLUME_GRACE_DAYS (docs/volumes.md),
// still charged (the balance goes below zero), and is e-mailed once when that starts; openrig
// never deletes a volume by itself.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import { tx } from '../../db/connection.js';
import { chargeMicros, diskDph } from '../billing/billing.meter.js';
import { balanceOf, debitUsers, insertLedger } from '../billing/billing.service.js';
import { enqueueEmail } from '../notifications/notifications.outbox.js';
import * as repo from './volumes.repo.js';
import type { VolumeRow } from './volumes.repo.js';
import { volumeUnpaidEmail } from './volumes.mail.js';

/** Days a volume of an owner without credit is promised to be kept (the e-mail says until when). */
export const VOLUME_GRACE_DAYS = 14;
/** Volumes are charged once an hour (and at deletion, up to the moment). */
export const VOLUME_METER_PERIOD_MS = 3_600_000;

/** Charges a volume up to `now`, in the caller's transaction; the micro-dollars charged. */
export async function settleVolume(db: Kysely<DB>, v: VolumeRow, now: number): Promise<number> {
  const from = Number(v.billed_until);
  if (now <= from) return 0;
  const micros = chargeMicros(diskDph(v.storage_cost, Number(v.size_gb)), from, now);
  if (!(await repo.chargeVolume(db, Number(v.id), from, now, micros)) || micros === 0) return 0;
  const userId = Number(v.user_id);
  await insertLedger(db, [
    {
      user_id: userId,
      instance_id: null,
      kind: 'volume',
      volume_id: Number(v.id),
      amount_micros: micros,
      period_start: from,
      period_end: now,
      created_at: now,
    },
  ]);
  await debitUsers(db, new Map([[userId, micros]]));
  return micros;
}

/**
 * One meter run over the live volumes billed an hour ago or more: each is charged in a
 * transaction of its own; an owner found without credit is marked unpaid (and e-mailed, once),
 * one found with credit again is cleared. Safe with several processes (see the header).
 */
export async function runVolumeMeter(
  deps: Pick<Deps, 'store' | 'clock'>,
): Promise<{ settled: number; unpaid: number[] }> {
  const now = deps.clock.now();
  const due = await repo.dueVolumeIds(deps.store.db, now - VOLUME_METER_PERIOD_MS + 1, 1000);
  let settled = 0;
  const unpaid: number[] = [];
  for (const id of due) {
    await tx(deps.store, async (db) => {
      const v = await repo.volumeById(db, id);
      if (!v || v.deleted_at !== null) return;
      if ((await settleVolume(db, v, now)) > 0) settled++;
      const exhausted = (await balanceOf(db, Number(v.user_id))) <= 0;
      if (exhausted && v.unpaid_since === null) {
        // Conditional: of two meters, one marks it and sends the e-mail.
        if (await repo.markUnpaid(db, Number(v.id), now)) {
          unpaid.push(Number(v.id));
          const to = await repo.ownerEmail(db, Number(v.user_id));
          const mail = volumeUnpaidEmail({
            volumeId: Number(v.id),
            label: v.label,
            keptUntil: now + VOLUME_GRACE_DAYS * 86_400_000,
            graceDays: VOLUME_GRACE_DAYS,
          });
          if (to)
            await enqueueEmail(db, now, {
              key: `volume:unpaid:${Number(v.id)}:${now}`,
              to,
              ...mail,
              category: 'billing',
            });
        }
      } else if (!exhausted && v.unpaid_since !== null) {
        await repo.clearUnpaid(db, Number(v.id));
      }
    });
  }
  return { settled, unpaid };
}
