// Migration 009: live-instance lookups by machine or by user use their own indexes on
// SQLite, which plans without statistics. Before it, `destroyed_at IS NULL` matched the leading
// column of instances_live_idx and SQLite walked every live instance for each agent sync.
import { expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';

describeEachDb('live-instance query plans', (dialect) => {
  const t = useTestApp(dialect);

  async function plan(text: string): Promise<string> {
    const explain = dialect === 'sqlite' ? `EXPLAIN QUERY PLAN ${text}` : `EXPLAIN ${text}`;
    const rows = (await t().deps.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(explain, [])))
      .rows;
    return rows.map((r) => String(Object.values(r).at(-1))).join('\n');
  }

  const cases: [string, string, RegExp][] = [
    // agent sync (agent-gateway.repo.ts instancesForAgent), with and without reported ids
    [
      'an agent sync',
      'SELECT id FROM instances WHERE machine_id IN (1, 2, 3) AND destroyed_at IS NULL ORDER BY id',
      /instances_machine_idx|instances_one_live_per_machine/,
    ],
    [
      'an agent sync with reported ids',
      'SELECT id FROM instances WHERE machine_id IN (1, 2, 3) AND (destroyed_at IS NULL OR id IN (5, 6)) ORDER BY id',
      /instances_machine_idx/,
    ],
    // a user's live instances (billing stop on an exhausted balance, the instance list)
    [
      "a user's live instances",
      "SELECT id FROM instances WHERE user_id = 7 AND destroyed_at IS NULL AND intended_status = 'running'",
      /instances_user_idx/,
    ],
    // the meter's walk (billing.service.ts runMeter)
    [
      'the meter',
      'SELECT id FROM instances WHERE destroyed_at IS NULL AND billed_until <= 5 ORDER BY billed_until LIMIT 1000',
      /instances_live_billing_idx/,
    ],
  ];

  for (const [name, text, index] of cases) {
    it(`plans ${name} on its own index`, async () => {
      const p = await plan(text);
      if (dialect === 'sqlite') {
        expect(p).toMatch(index);
        expect(p).not.toMatch(/SCAN instances(?! USING INDEX instances_live_billing_idx)/);
        expect(p).not.toContain('instances_live_idx');
      } else {
        // PostgreSQL plans by its statistics (a seq scan is right for an empty table): only that
        // the statement plans against the migrated schema.
        expect(p).toMatch(/instances/);
      }
    });
  }

  it('has dropped the index the planner misused', async () => {
    const q =
      dialect === 'sqlite'
        ? "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'instances'"
        : "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'instances' AND schemaname = current_schema()";
    const names = (await t().deps.db.executeQuery<{ name: string }>(CompiledQuery.raw(q, []))).rows.map(
      (r) => r.name,
    );
    expect(names).toContain('instances_live_billing_idx');
    expect(names).not.toContain('instances_live_idx');
  });
});
