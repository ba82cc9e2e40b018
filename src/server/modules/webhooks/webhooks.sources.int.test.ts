// The events other modules record, each in the transaction of its change: maintenance (host and
// renters), machines going offline and back online, balance.low at the user's threshold, 2FA and
// API keys. Each is checked through the feed of the user it belongs to.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { renter } from '../../../../test/helpers/market.js';
import { sweepHeartbeats } from '../../jobs/heartbeat-sweep.js';
import { runMeter } from '../billing/billing.service.js';
import { setActualStatus } from '../instances/instances.moves.js';
import { enableTotp } from '../two-factor/two-factor.testkit.js';

const P = '/api/agent/v1';

async function feed(t: TestApp, key: string, types?: string) {
  const r = await t.request('GET', `/api/v0/events/${types ? `?types=${types}` : ''}`, { key });
  expect(r.status).toBe(200);
  return r.body.events as { id: string; type: string; data: Record<string, any> }[];
}

/** A host whose agent registered one machine (online, heartbeating), and a renter's instance on it. */
async function rented(t: TestApp, uid: string) {
  const host = await t.user();
  const reg = await t.request('POST', `${P}/register`, {
    key: host.apiKey,
    body: {
      agent_uid: uid,
      machines: [
        {
          slot: 0,
          hostname: 'h0',
          gpu_name: 'RTX 4090',
          num_gpus: 1,
          gpu_ram: 24564,
          cpu_ram: 64000,
          disk_space: 500,
        },
      ],
      price_gpu: 0.4,
      price_disk: 0.1,
    },
  });
  expect(reg.status).toBe(200);
  const mid = reg.body.machines[0].machine_id as number;
  const client = await renter(t);
  const r = await t.request('PUT', `/api/v0/asks/${mid}/`, { key: client.apiKey, body: { image: 'img' } });
  expect(r.status).toBe(200);
  return { host, mid, client, instanceId: r.body.new_contract as number };
}

describeEachDb('events recorded by other modules', (dialect) => {
  const t = useTestApp(dialect);

  it('maintenance.scheduled and .cancelled reach the host and the renter on the machine', async () => {
    const { host, mid, client, instanceId } = await rented(t(), 'agent-events-0001');
    const sdate = Math.floor(t().clock.now() / 1000) + 24 * 3600;
    const s = await t().request('PUT', `/api/v0/machines/${mid}/dnotify/`, {
      key: host.apiKey,
      body: { sdate, duration: 2, maintenance_category: 'gpu' },
    });
    expect(s.status).toBe(200);
    const c = await t().request('PUT', `/api/v0/machines/${mid}/cancel_maint`, { key: host.apiKey });
    expect(c.status).toBe(200);
    const hostEvents = await feed(t(), host.apiKey, 'maintenance.*');
    expect(hostEvents.map((e) => e.type)).toEqual(['maintenance.scheduled', 'maintenance.cancelled']);
    expect(hostEvents[0]!.data).toMatchObject({
      machine_id: mid,
      role: 'host',
      start_time: sdate,
      duration_hours: 2,
    });
    const clientEvents = await feed(t(), client.apiKey, 'maintenance.*');
    expect(clientEvents.map((e) => e.type)).toEqual(['maintenance.scheduled', 'maintenance.cancelled']);
    expect(clientEvents[0]!.data).toMatchObject({ role: 'renter', instance_ids: [instanceId] });
  });

  it('machine.offline and instance.offline when heartbeats lapse, machine.online when the agent is back', async () => {
    const { host, mid, client, instanceId } = await rented(t(), 'agent-events-0002');
    t().clock.advance((t().config.agent.offlineAfterS + 1) * 1000);
    const r = await sweepHeartbeats(t().deps);
    expect(r.machinesOffline).toBeGreaterThanOrEqual(1);
    expect((await feed(t(), host.apiKey, 'machine.*')).map((e) => [e.type, e.data.machine_id])).toEqual([
      ['machine.offline', mid],
    ]);
    const inst = await feed(t(), client.apiKey, 'instance.offline');
    expect(inst.map((e) => e.data.instance_id)).toEqual([instanceId]);
    const sync = await t().request('POST', `${P}/sync`, {
      key: host.apiKey,
      body: { agent_uid: 'agent-events-0002', machine_ids: [mid], instances: [] },
    });
    expect(sync.status).toBe(200);
    expect((await feed(t(), host.apiKey, 'machine.*')).map((e) => e.type)).toEqual([
      'machine.offline',
      'machine.online',
    ]);
  });

  it('balance.low fires once when the balance falls to the threshold, and again after a top-up', async () => {
    const { client, instanceId } = await rented(t(), 'agent-events-0003');
    expect(await setActualStatus(t().deps, instanceId, null, 'running')).toBe(true);
    const set = await t().request('PUT', '/api/v0/events/settings/', {
      key: client.apiKey,
      body: { balance_low_threshold: 99.9 },
    });
    expect(set.status).toBe(200);
    expect(set.body.balance_low_threshold).toBe(99.9);
    // 0.4 $/h compute: 100 $ falls under 99.9 $ after 15 minutes.
    t().clock.advance(20 * 60_000);
    await runMeter(t().deps);
    t().clock.advance(20 * 60_000);
    await runMeter(t().deps);
    const low = await feed(t(), client.apiKey, 'balance.low');
    expect(low).toHaveLength(1);
    expect(low[0]!.data.threshold).toBe(99.9);
    expect(low[0]!.data.balance).toBeLessThanOrEqual(99.9);
    // The alert also e-mails the account, once per crossing.
    const mails = () =>
      t()
        .deps.db.selectFrom('email_outbox')
        .selectAll()
        .where('category', '=', 'balance.low')
        .where('to_addr', '=', client.email)
        .execute();
    const sent = await mails();
    expect(sent).toHaveLength(1);
    expect(sent[0]!.subject).toMatch(/^openrig: your balance is \$99\.\d\d$/);
    expect(sent[0]!.text_body).toContain('at or below the $99.90 you asked to be told about');
    // A top-up above the threshold re-arms it; the next fall fires again.
    await t()
      .deps.db.updateTable('users')
      .set((eb) => ({ balance_micros: eb('balance_micros', '+', 1_000_000) }))
      .where('id', '=', client.id)
      .execute();
    t().clock.advance(60_000);
    await runMeter(t().deps);
    t().clock.advance(3 * 3_600_000);
    await runMeter(t().deps);
    expect(await feed(t(), client.apiKey, 'balance.low')).toHaveLength(2);
    expect(await mails()).toHaveLength(2);
    expect(
      (
        await t().request('PUT', '/api/v0/events/settings/', {
          key: client.apiKey,
          body: { balance_low_threshold: -1 },
        })
      ).status,
    ).toBe(400);
  });

  it('tfa.method_added, tfa.enabled, api_key.created and api_key.revoked, with no secret in them', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const k = await t().request('POST', '/api/v0/auth/apikeys', { key: u.apiKey, body: { name: 'ci' } });
    expect(k.status).toBe(200);
    expect((await t().request('DELETE', `/api/v0/auth/apikeys/${k.body.id}`, { key: u.apiKey })).status).toBe(
      200,
    );
    const events = await feed(t(), u.apiKey, 'tfa.*,api_key.*');
    expect(events.map((e) => e.type)).toEqual([
      'tfa.method_added',
      'tfa.enabled',
      'api_key.created',
      'api_key.revoked',
    ]);
    expect(events[0]!.data).toMatchObject({ method: 'totp', tfa_method_id: totp.id });
    expect(events[2]!.data).toEqual({ api_key_id: k.body.id, name: 'ci' });
    const raw = JSON.stringify(events);
    expect(raw).not.toContain(totp.secret);
    expect(raw).not.toContain(k.body.key);
  });
});
