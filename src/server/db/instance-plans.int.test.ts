// Query plans on SQLite, which plans without statistics:
// - Migration 009: live-instance lookups by machine or by user use their own indexes. Before it,
//   `destroyed_at IS NULL` matched the leading column of instances_live_idx and SQLite walked
//   every live instance for each agent sync.
// - Migration 025: the billing history and host earnings read a date range of the ledger through
//   an index, not every ledger row of the account or of the host's instances.
import { expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../test/helpers/app.js';

/** The plan of `text` as one string (SQLite's EXPLAIN QUERY PLAN details, PostgreSQL's EXPLAIN). */
async function planOf(app: TestApp, dialect: string, text: string): Promise<string> {
  const explain = dialect === 'sqlite' ? `EXPLAIN QUERY PLAN ${text}` : `EXPLAIN ${text}`;
  const rows = (await app.deps.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(explain, []))).rows;
  return rows.map((r) => String(Object.values(r).at(-1))).join('\n');
}

describeEachDb('live-instance query plans', (dialect) => {
  const t = useTestApp(dialect);
  const plan = (text: string) => planOf(t(), dialect, text);

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

describeEachDb('ledger range query plans', (dialect) => {
  const t = useTestApp(dialect);
  const plan = (text: string) => planOf(t(), dialect, text);

  // The shapes of billing.invoices.repo.ts (dailyCharges, creditsBetween, chargedSince) and
  // billing.repo.ts (hostEarnings).
  const cases: [string, string, RegExp][] = [
    [
      "a user's charges of a range",
      "SELECT l.instance_id, sum(l.amount_micros) FROM billing_ledger l JOIN instances i ON i.id = l.instance_id WHERE l.user_id = 7 AND l.kind IN ('compute', 'disk') AND l.period_end > 1 AND l.period_end <= 2 GROUP BY l.instance_id, l.kind",
      /SEARCH l USING INDEX billing_ledger_user_kind_end_idx \(user_id=\? AND kind=\? AND period_end>\? AND period_end<\?\)/,
    ],
    [
      "a user's credits of a range",
      "SELECT id FROM billing_ledger WHERE user_id = 7 AND kind = 'credit' AND period_end > 1 AND period_end <= 2 ORDER BY id",
      /billing_ledger_user_kind_end_idx \(user_id=\? AND kind=\? AND period_end>\? AND period_end<\?\)/,
    ],
    [
      "a host's earnings of a range",
      "SELECT i.machine_id, sum(l.amount_micros) FROM billing_ledger l JOIN instances i ON i.id = l.instance_id JOIN machines m ON m.id = i.machine_id WHERE m.host_id = 7 AND l.kind IN ('compute', 'disk') AND l.period_end > 1 AND l.period_end <= 2 GROUP BY i.machine_id",
      /SEARCH l USING INDEX billing_ledger_instance_end_idx \(instance_id=\? AND period_end>\? AND period_end<\?\)/,
    ],
  ];

  for (const [name, text, index] of cases) {
    it(`plans ${name} as an index range`, async () => {
      const p = await plan(text);
      if (dialect === 'sqlite') {
        expect(p).toMatch(index);
        expect(p).not.toMatch(/SCAN (l|billing_ledger)\b/);
      } else {
        expect(p).toMatch(/billing_ledger/);
      }
    });
  }
});
