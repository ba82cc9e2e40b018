// Heartbeats written in batches (agent-gateway.heartbeats.ts): an online machine's timestamp
// waits for the flush; a transition is written at once; a flush never moves a timestamp back nor
// revives a machine the sweep took offline; the sweep counts heartbeats still in memory.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { sweepHeartbeats } from '../../jobs/heartbeat-sweep.js';
import { flushHeartbeats } from './agent-gateway.heartbeats.js';
import { writeTimes } from './agent-gateway.repo.js';
import { CompiledQuery } from 'kysely';
import { agentMachine } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';
const hw = (slot: number) => agentMachine(slot);

describeEachDb('heartbeats in batches', (dialect) => {
  const t = useTestApp(dialect, {
    OPENRIG_UNKNOWN_AFTER_S: '60',
    OPENRIG_OFFLINE_AFTER_S: '300',
    OPENRIG_HEARTBEAT_S: '10',
  });

  async function agent(uid: string) {
    const host = await t().user();
    const r = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: [hw(0), hw(1)], price_gpu: 0.4 },
    });
    expect(r.status).toBe(200);
    const ids: number[] = r.body.machines.map((m: { machine_id: number }) => m.machine_id);
    const sync = () =>
      t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: uid, machine_ids: ids, instances: [] },
      });
    return { host, ids, sync };
  }
  const machine = (id: number) =>
    t()
      .deps.db.selectFrom('machines')
      .select(['online_state', 'last_heartbeat_at'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  it("keeps an online machine's new timestamp in memory until the flush, then writes it", async () => {
    const a = await agent('hb-batch-0001');
    const t0 = (await machine(a.ids[0]!)).last_heartbeat_at!;
    t().clock.advance(10_000);
    const r = await a.sync();
    expect(r.status).toBe(200);
    expect(r.body.unknown_machine_ids).toEqual([]);
    expect((await machine(a.ids[0]!)).last_heartbeat_at).toBe(t0);
    await flushHeartbeats(t().deps);
    for (const id of a.ids)
      expect(await machine(id)).toEqual({ online_state: 'online', last_heartbeat_at: t0 + 10_000 });
  });

  it("writes a machine coming back online at once, and answers only the agent's own machines", async () => {
    const a = await agent('hb-batch-0002');
    const other = await agent('hb-batch-0003');
    await t()
      .deps.db.updateTable('machines')
      .set({ online_state: 'offline' })
      .where('id', '=', a.ids[1]!)
      .execute();
    t().clock.advance(5_000);
    const r = await t().request('POST', `${P}/sync`, {
      key: a.host.apiKey,
      body: { agent_uid: 'hb-batch-0002', machine_ids: [...a.ids, other.ids[0]], instances: [] },
    });
    expect(r.body.unknown_machine_ids).toEqual([other.ids[0]]);
    expect(await machine(a.ids[1]!)).toEqual({ online_state: 'online', last_heartbeat_at: t().clock.now() });
  });

  it('never moves a timestamp back and never revives a machine taken offline meanwhile', async () => {
    const a = await agent('hb-batch-0004');
    t().clock.advance(10_000);
    await a.sync(); // pending at now
    const pendingAt = t().clock.now();
    // Another process wrote a later heartbeat of machine 0 and took machine 1 offline.
    await t()
      .deps.db.updateTable('machines')
      .set({ last_heartbeat_at: pendingAt + 5_000 })
      .where('id', '=', a.ids[0]!)
      .execute();
    await t()
      .deps.db.updateTable('machines')
      .set({ online_state: 'offline', last_heartbeat_at: 1 })
      .where('id', '=', a.ids[1]!)
      .execute();
    await flushHeartbeats(t().deps);
    expect(await machine(a.ids[0]!)).toEqual({
      online_state: 'online',
      last_heartbeat_at: pendingAt + 5_000,
    });
    expect(await machine(a.ids[1]!)).toEqual({ online_state: 'offline', last_heartbeat_at: 1 });
  });

  it('lets the sweep see heartbeats still in memory', async () => {
    const a = await agent('hb-batch-0005');
    const quiet = await agent('hb-batch-0006');
    t().clock.advance(299_000);
    await a.sync(); // only in memory: the database still says 299 s ago
    t().clock.advance(2_000);
    await sweepHeartbeats(t().deps);
    for (const id of a.ids) expect((await machine(id)).online_state).toBe('online');
    for (const id of quiet.ids) expect((await machine(id)).online_state).toBe('offline'); // the sweep did run
  });

  it('writes many machines in one flush, concurrent flushes included', async () => {
    const agents = await Promise.all(
      Array.from({ length: 6 }, (_, i) => agent(`hb-batch-1${String(i).padStart(3, '0')}`)),
    );
    t().clock.advance(10_000);
    await Promise.all(agents.map((a) => a.sync()));
    await Promise.all([flushHeartbeats(t().deps), flushHeartbeats(t().deps)]);
    for (const a of agents)
      for (const id of a.ids) expect((await machine(id)).last_heartbeat_at).toBe(t().clock.now());
  });

  it('finds each machine of a flush by its primary key, never by a walk over all machines', async () => {
    const q = writeTimes(t().deps.dialect, [
      [1, 1],
      [2, 2],
    ]);
    const explain = dialect === 'sqlite' ? `EXPLAIN QUERY PLAN ${q.sql}` : `EXPLAIN ${q.sql}`;
    const plan = (
      await t().deps.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(explain, [...q.parameters]))
    ).rows
      .map((r) => String(Object.values(r).at(-1)))
      .join('\n');
    if (dialect === 'sqlite') {
      expect(plan).toContain('USING INTEGER PRIMARY KEY');
      expect(plan).not.toMatch(/SCAN machines|SEARCH machines USING INDEX/);
    } else {
      // PostgreSQL joins the arrays to machines by cost (a seq scan is right for a tiny table);
      // here only that the statement plans.
      expect(plan).toMatch(/Update on machines/);
    }
  });
});
