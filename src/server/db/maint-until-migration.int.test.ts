// Migration 017 on a database that already has maintenance windows: maint_until is filled from
// the windows not cancelled, and machines that got one move to a new version, so the offer index
// of a process that was already running reads the new column too.
import { expect, it } from 'vitest';
import { sql } from 'kysely';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { createMachines } from '../modules/machines/machines.service.js';
import { createVersionUpdateTrigger, VERSIONED_COLUMNS } from './migrations/007-offer-index.js';
import { up } from './migrations/017-machine-maint-until.js';

describeEachDb('migration 017: machines.maint_until', (dialect) => {
  const t = useTestApp(dialect);

  it('fills maint_until from the windows not cancelled and versions the machines it fills', async () => {
    const host = await t().user();
    const { machine_ids } = await createMachines(t().deps, {
      ownerEmail: host.email,
      gpuName: 'RTX 4090',
      numGpus: 1,
      count: 3,
      priceGpu: 0.5,
    });
    const [a, b, c] = machine_ids as [number, number, number];
    const db = t().db.store.db;
    // Back to the schema before 017: the trigger without the column, then no column.
    await createVersionUpdateTrigger(db, t().db.store.dialect, VERSIONED_COLUMNS);
    await sql`ALTER TABLE machines DROP COLUMN maint_until`.execute(db);
    const now = Date.now();
    const w = (machine_id: number, end: number, canceled_at: number | null) => ({
      machine_id,
      host_id: host.id,
      batch_id: `b-${end}`,
      start_time: end - 3_600_000,
      end_time: end,
      duration_hours: 1,
      category: 'gpu' as const,
      notifications_sent: 0,
      created_at: now,
      canceled_at,
    });
    await db
      .insertInto('maintenance_windows')
      .values([
        w(a, now + 7_200_000, null),
        w(a, now + 90_000_000, now),
        w(a, now + 3_600_000, null),
        w(b, now + 5_000_000, now),
      ])
      .execute();
    const versions = async () =>
      new Map(
        (
          await sql<{
            id: number;
            row_version: number;
          }>`SELECT id, row_version FROM machines WHERE id IN (${a}, ${b}, ${c})`.execute(db)
        ).rows.map((r) => [Number(r.id), Number(r.row_version)]),
      );
    const before = await versions();

    await up(db, t().db.store.dialect);

    const rows = await db
      .selectFrom('machines')
      .select(['id', 'maint_until'])
      .where('id', 'in', machine_ids)
      .execute();
    const until = new Map(
      rows.map((r) => [Number(r.id), r.maint_until === null ? null : Number(r.maint_until)]),
    );
    // a: the later of its two live windows (the cancelled one ends later still); b: only a
    // cancelled window; c: none.
    expect(until).toEqual(
      new Map([
        [a, now + 7_200_000],
        [b, null],
        [c, null],
      ]),
    );
    const after = await versions();
    expect(after.get(a)).toBeGreaterThan(before.get(a)!);
    expect(after.get(b)).toBe(before.get(b));
    expect(after.get(c)).toBe(before.get(c));
    // And the recreated trigger versions later changes of the column.
    await db.updateTable('machines').set({ maint_until: now }).where('id', '=', c).execute();
    expect((await versions()).get(c)).toBeGreaterThan(after.get(c)!);
  });
});
