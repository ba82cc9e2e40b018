// Migrations on PostgreSQL next to other schemas being created and dropped in the same database
// (other deployments; test files in parallel): the migrator's table checks must not trip over a
// concurrent DROP SCHEMA (they did, now and then, through Kysely's database-wide introspection).
import { expect, it } from 'vitest';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { createTestDb, describeEachDb } from '../../../test/helpers/db.js';

const PG_URL = process.env.DATABASE_URL_TEST ?? 'postgres://postgres@127.0.0.1:5432/test';

describeEachDb('migrations beside concurrent DDL', (dialect) => {
  it('migrates fresh schemas while others are created and dropped', async () => {
    if (dialect === 'sqlite') return; // one file, one database: nothing to race with
    let stop = false;
    const churn = async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      try {
        while (!stop) {
          const s = `churn_${randomBytes(5).toString('hex')}`;
          await c.query(`create schema ${s}`);
          await c.query(
            `create table ${s}.a (id int primary key, v text); create table ${s}.b (id int references ${s}.a)`,
          );
          await c.query(`drop schema ${s} cascade`);
        }
      } finally {
        await c.end();
      }
    };
    const churners = [churn(), churn()];
    try {
      for (let i = 0; i < 4; i++) {
        const db = await createTestDb('postgres');
        await db.cleanup();
      }
    } finally {
      stop = true;
      await Promise.all(churners);
    }
    expect(stop).toBe(true);
  }, 120_000);
});
