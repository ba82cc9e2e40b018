import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDb, createTestDb, type TestDb } from '../../../test/helpers/db.js';

describeEachDb('store', (dialect) => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb(dialect);
  });
  afterAll(async () => db?.cleanup());

  it('accepts a subnormal double from a JSON body instead of failing (PostgreSQL refuses them)', async () => {
    const u = await db.store.db
      .insertInto('users')
      .values({
        email: `tiny-${dialect}@example.com`,
        full_name: '',
        tfa_status: 'disabled',
        is_admin: 0,
        sms_fraud: 0,
        balance_micros: 0,
        created_at: Date.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const m = await db.store.db
      .insertInto('machines')
      .values({
        host_id: u.id,
        gpu_name: 'RTX 4090',
        num_gpus: 1,
        cpu_ghz: 5e-324,
        created_at: Date.now(),
      } as any)
      .returning('cpu_ghz')
      .executeTakeFirstOrThrow();
    expect(m.cpu_ghz).toBeLessThan(1e-300);
    const found = await db.store.db
      .selectFrom('machines')
      .select('id')
      .where('cpu_ghz', '<=', 5e-324)
      .execute();
    expect(found).toHaveLength(1);
  });
});
