// Races on volumes are decided by the database: concurrent creates never take more of a volume
// offer than it has (a conditional UPDATE of its used GB), and of a create and an unlist of one
// offer racing, exactly one goes through and the books agree.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { agentMachine } from '../../../../test/helpers/market.js';

describeEachDb('volume races', (dialect) => {
  const t = useTestApp(dialect);
  let host: { apiKey: string };
  let machines: number[];
  let renters: { apiKey: string }[];

  beforeAll(async () => {
    host = await t().user();
    const reg = await t().request('POST', '/api/agent/v1/register', {
      key: host.apiKey,
      body: { agent_uid: 'agent-volrace-0001', machines: [agentMachine(0), agentMachine(1)], price_gpu: 0.4 },
    });
    machines = reg.body.machines.map((m: { machine_id: number }) => m.machine_id);
    renters = await Promise.all(Array.from({ length: 8 }, () => t().user()));
  });

  const offer = async (machine: number, size: number) => {
    const r = await t().request('POST', '/api/v0/volumes/', {
      key: host.apiKey,
      body: { size, machine, price_disk: 0.1 },
    });
    expect(r.status, r.raw).toBe(200);
    return r.body.volume_asks[0].id as number;
  };
  const used = async (askId: number) =>
    Number(
      (
        await t()
          .deps.db.selectFrom('volume_asks')
          .select('used_gb')
          .where('id', '=', askId)
          .executeTakeFirstOrThrow()
      ).used_gb,
    );

  it('eight creates of 20 GB on a 100 GB offer: exactly five win', async () => {
    const ask = await offer(machines[0]!, 100);
    const replies = await Promise.all(
      renters.map((u) =>
        t().request('PUT', '/api/v0/volumes/', { key: u.apiKey, body: { size: 20, id: ask } }),
      ),
    );
    const won = replies.filter((r) => r.status === 200);
    expect(won.length).toBe(5);
    for (const r of replies.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(400);
      expect(r.body.msg).toMatch(/exceeds the 0 GB left/);
    }
    expect(await used(ask)).toBe(100);
    const rows = await t()
      .deps.db.selectFrom('volumes')
      .select('size_gb')
      .where('ask_id', '=', ask)
      .execute();
    expect(rows.reduce((s, r) => s + Number(r.size_gb), 0)).toBe(100);
  });

  it('a create and an unlist of one offer at once: one of them goes through', async () => {
    for (let round = 0; round < 4; round++) {
      const ask = await offer(machines[1]!, 50);
      const [c, un] = await Promise.all([
        t().request('PUT', '/api/v0/volumes/', { key: renters[round]!.apiKey, body: { size: 10, id: ask } }),
        t().request('POST', '/api/v0/volumes/unlist', { key: host.apiKey, body: { id: ask } }),
      ]);
      const ok = [c.status, un.status].filter((s) => s === 200).length;
      expect(ok, `${c.raw} ${un.raw}`).toBe(1);
      const a = await t()
        .deps.db.selectFrom('volume_asks')
        .select(['listed', 'used_gb'])
        .where('id', '=', ask)
        .executeTakeFirstOrThrow();
      if (c.status === 200) {
        expect(a).toMatchObject({ listed: 1 });
        expect(Number(a.used_gb)).toBe(10);
        // Clean up for the next round: delete the volume, then unlist.
        expect(
          (
            await t().request('DELETE', `/api/v0/volumes/?id=${c.body.volume_id}`, {
              key: renters[round]!.apiKey,
            })
          ).status,
        ).toBe(200);
        expect(
          (await t().request('POST', '/api/v0/volumes/unlist', { key: host.apiKey, body: { id: ask } }))
            .status,
        ).toBe(200);
      } else {
        expect(a.listed).toBe(0);
        expect(Number(a.used_gb)).toBe(0);
      }
    }
  });
});
