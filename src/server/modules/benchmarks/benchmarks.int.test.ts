// Benchmarks and verification against both databases: a run fills the offer fields and the
// benchmark rows, the verification follows the hardware (a hardware change deverifies; good
// benchmarks after the online time verify; bad ones deverify), every change is recorded and
// e-mailed, out-of-bounds hardware is refused, and two changes at once apply once.
import { describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { renter as renterWithKey } from '../../../../test/helpers/market.js';
import type { BenchmarkReport, GpuBenchmark } from '../../../contract/benchmarks.js';
import { changeVerification, operatorSetVerification } from './benchmarks.service.js';
import { machineById } from './benchmarks.repo.js';
import { machineEvent, recordEvents } from '../webhooks/webhooks.events.js';

const P = '/api/agent/v1';
const hw = (over: Record<string, unknown> = {}) => ({
  slot: 0,
  hostname: 'h0',
  gpu_name: 'RTX 4090',
  num_gpus: 2,
  gpu_ram: 24564,
  cpu_name: 'AMD EPYC 7B13',
  cpu_cores: 32,
  cpu_ram: 128000,
  disk_space: 500,
  driver_version: '550.54.14',
  cuda_max_good: 12.4,
  dlperf: 78,
  ...over,
});
const gpu = (over: Record<string, unknown> = {}): GpuBenchmark => ({
  name: 'RTX 4090',
  count: 2,
  ram_mb: 24564,
  driver: '550.54.14',
  compute_cap: 890,
  pci_gen: 4,
  pcie_bw: 24.5,
  gpu_mem_bw: 905.5,
  total_flops: 250,
  power_limit: 450,
  max_temp: 87,
  display_active: false,
  nvlink_bw: 0,
  cuda: 'PyTorch on 2 GPU(s)',
  ...over,
});
const report = (uid: string, machineId: number, over: Partial<BenchmarkReport> = {}): BenchmarkReport => ({
  agent_uid: uid,
  machine_id: machineId,
  version: '0.1.0',
  trigger: 'registration',
  cpu: { name: 'AMD EPYC 7B13', arch: 'amd64', cores: 32, ghz: 3.5, score: 1500, has_avx: true },
  mem_bw: 12.5,
  disk_bw: 1800,
  inet_up: 900,
  inet_down: 950,
  system: { ubuntu_version: '22.04', mobo_name: 'MZ32-AR0' },
  gpu: gpu(),
  seconds: 3.2,
  ...over,
});

async function registered(
  t: TestApp,
  over: Record<string, unknown> = {},
  uid = `agent-${Math.random().toString(36).slice(2, 10)}`,
) {
  const host = await t.user();
  const r = await t.request('POST', `${P}/register`, {
    key: host.apiKey,
    body: { agent_uid: uid, machines: [hw(over)], price_gpu: 0.5 },
  });
  expect(r.status).toBe(200);
  return { host, uid, id: r.body.machines[0].machine_id as number, reply: r.body };
}

const machine = (t: TestApp, id: number) =>
  t.deps.db.selectFrom('machines').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const history = (t: TestApp, id: number) =>
  t.deps.db
    .selectFrom('machine_verifications')
    .selectAll()
    .where('machine_id', '=', id)
    .orderBy('id')
    .execute();
const mails = (t: TestApp) =>
  t.deps.db.selectFrom('email_outbox').selectAll().where('category', '=', 'machine_verification').execute();

describeEachDb('benchmarks', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_VERIFY_AFTER_S: '3600', OPENRIG_BENCH_TOLERANCE: '0.25' });

  it('says in the register answer that it takes benchmarks, and how often', async () => {
    const { reply } = await registered(t());
    expect(reply).toMatchObject({ benchmarks: true, benchmark_interval_s: 86400 });
    expect(reply.machines[0].verification).toBe('unverified');
  });

  it('a run fills the offer fields, and the offer search filters on them', async () => {
    const { host, uid, id } = await registered(t());
    const r = await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, verification: 'unverified' });
    expect(r.body.verification_reason).toContain('online for 3600 s');
    const m = await machine(t(), id);
    expect(m).toMatchObject({
      total_flops: 250,
      gpu_mem_bw: 905.5,
      pcie_bw: 24.5,
      pci_gen: 4,
      compute_cap: 890,
      cpu_arch: 'amd64',
      has_avx: 1,
      ubuntu_version: '22.04',
      gpu_arch: 'nvidia',
      gpu_max_power: 450,
      gpu_max_temp: 87,
      disk_bw: 1800,
      inet_up: 900,
      inet_down: 950,
      cpu_ghz: 3.5,
      dlperf: 68.1,
    });
    const renter = await t().user();
    const search = await t().request('POST', '/api/v0/bundles/', {
      key: renter.apiKey,
      body: {
        machine_id: { eq: id },
        total_flops: { gte: 200 },
        gpu_mem_bw: { gt: 900 },
        dlperf: { gt: 10 },
        flops_per_dphtotal: { gt: 100 },
        compute_cap: { gte: 800 },
        cpu_arch: { eq: 'amd64' },
        has_avx: { eq: true },
        pci_gen: { gte: 4 },
        verification: { eq: 'unverified' },
      },
    });
    expect(search.status).toBe(200);
    expect(search.body.offers.map((o: { id: number }) => o.id)).toEqual([id]);
    expect(search.body.offers[0]).toMatchObject({ total_flops: 250, gpu_arch: 'nvidia', static_ip: false });
  });

  it('stores one row per measurement, listed by search benchmarks with the agent version', async () => {
    const { host, uid, id } = await registered(t());
    await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    const q = encodeURIComponent(JSON.stringify({ machine_id: { eq: id }, name: { eq: 'total flops' } }));
    const r = await t().request(
      'GET',
      `/api/v0/benchmarks?select_cols=${encodeURIComponent('["*"]')}&select_filters=${q}`,
      {
        key: host.apiKey,
      },
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual([
      {
        id: expect.any(Number),
        contract_id: null,
        machine_id: id,
        name: 'total_flops',
        model: 'RTX 4090',
        image: 'openrig-agent 0.1.0',
        num_gpus: 2,
        score: 250,
        unit: 'TFLOPS',
        last_update: t().clock.now() / 1000,
      },
    ]);
    const all = await t().request(
      'GET',
      `/api/v0/benchmarks?select_filters=${encodeURIComponent(JSON.stringify({ machine_id: id }))}`,
      { key: host.apiKey },
    );
    expect(all.body.map((b: { name: string }) => b.name).sort()).toEqual(
      [
        'cpu_ghz',
        'cpu_score',
        'disk_bw',
        'dlperf',
        'gpu_mem_bw',
        'gpu_ram',
        'inet_down',
        'inet_up',
        'mem_bw',
        'pcie_bw',
        'total_flops',
      ].sort(),
    );
    const bad = await t().request(
      'GET',
      `/api/v0/benchmarks?select_filters=${encodeURIComponent('{"flops":{"gt":1}}')}`,
      {
        key: host.apiKey,
      },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toContain('"flops"');
  });

  it('on a machine without a GPU the run says so and fills no GPU figure', async () => {
    const { host, uid, id } = await registered(t(), { driver_version: 'simulated' });
    const base = report(uid, id);
    const r = await t().request('POST', `${P}/benchmarks`, {
      key: host.apiKey,
      body: {
        ...base,
        // A virtual machine's CPU that reports no clock: no cpu_ghz row, the offer's clock kept.
        cpu: { ...base.cpu, ghz: 0 },
        gpu: { error: 'no NVIDIA GPU: nvidia-smi did not answer' },
      },
    });
    expect(r.body.verification_reason).toContain('measured no GPU');
    const names = await t()
      .deps.db.selectFrom('machine_benchmarks')
      .select('name')
      .where('machine_id', '=', id)
      .execute();
    expect(names.map((n) => n.name).sort()).toEqual(
      ['cpu_score', 'disk_bw', 'inet_down', 'inet_up', 'mem_bw'].sort(),
    );
    const m = await machine(t(), id);
    expect(m).toMatchObject({
      total_flops: 0,
      gpu_mem_bw: 0,
      gpu_arch: '',
      pcie_bw: 0,
      disk_bw: 1800,
      dlperf: 78,
    });
  });

  it('verifies a machine whose benchmarks match its reference once online long enough, recorded and e-mailed', async () => {
    const { host, uid, id } = await registered(t());
    await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    expect((await machine(t(), id)).verified).toBe(0);
    t().clock.advance(3600_000);
    // Heartbeats keep it online meanwhile.
    await t().deps.db.updateTable('machines').set({ online_state: 'online' }).where('id', '=', id).execute();
    const r = await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    expect(r.body.verification).toBe('verified');
    expect(await machine(t(), id)).toMatchObject({ verified: 1, verification: 'verified' });
    const h = await history(t(), id);
    expect(h).toMatchObject([{ from_state: 'unverified', to_state: 'verified', actor: 'rule' }]);
    expect(h[0]!.reason).toContain('within 25 % of the RTX 4090 reference');
    const sent = (await mails(t())).filter((m) => m.to_addr === host.email);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.subject).toBe(`Machine ${id} is now verified`);
    const view = await t().request('GET', `/api/v0/machines/${id}/verification`, { key: host.apiKey });
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      machine_id: id,
      verification: 'verified',
      history: [{ from: 'unverified', to: 'verified', by: 'rule' }],
    });
    expect(view.body.benchmarks.length).toBeGreaterThan(0);
    const other = await t().user();
    expect(
      (await t().request('GET', `/api/v0/machines/${id}/verification`, { key: other.apiKey })).status,
    ).toBe(404);
  });

  it('the online time counts from the last time the machine went offline', async () => {
    const { host, uid, id } = await registered(t());
    t().clock.advance(1800_000);
    // Its heartbeats stopped for a while (the sweep records machine.offline), then came back.
    await t()
      .deps.store.db.transaction()
      .execute((trx) => recordEvents(trx, t().clock.now(), [machineEvent(host.id, id, 'offline')]));
    t().clock.advance(1800_000);
    await t().deps.db.updateTable('machines').set({ online_state: 'online' }).where('id', '=', id).execute();
    // An hour since registration, but only half an hour online since it went offline.
    const early = await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    expect(early.body.verification).toBe('unverified');
    expect(early.body.verification_reason).toContain('(1800 s so far)');
    t().clock.advance(1800_000);
    const later = await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    expect(later.body.verification).toBe('verified');
  });

  it('a hardware change at re-registration deverifies a verified machine, with the change as reason', async () => {
    const { host, uid, id } = await registered(t());
    await operatorSetVerification({ db: t().deps.db, now: t().clock.now() }, id, true);
    expect((await machine(t(), id)).verified).toBe(1);
    const again = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: [hw({ gpu_name: 'RTX 3090', gpu_ram: 24576 })] },
    });
    expect(again.status).toBe(200);
    expect(again.body.machines[0]).toMatchObject({ machine_id: id, verification: 'deverified' });
    expect(await machine(t(), id)).toMatchObject({ verified: 0, verification: 'deverified' });
    const h = await history(t(), id);
    expect(h.map((e) => [e.from_state, e.to_state, e.actor])).toEqual([
      ['unverified', 'verified', 'operator'],
      ['verified', 'deverified', 'rule'],
    ]);
    expect(h[1]!.reason).toBe(
      'hardware or driver changed at re-registration: gpu_name "RTX 4090" → "RTX 3090", gpu_ram 24564 → 24576',
    );
    const renter = await t().user();
    const search = await t().request('POST', '/api/v0/bundles/', {
      key: renter.apiKey,
      body: { machine_id: { eq: id } },
    });
    expect(search.body.offers[0].verification).toBe('deverified');
    // The same hardware again changes nothing.
    await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: [hw({ gpu_name: 'RTX 3090', gpu_ram: 24576 })] },
    });
    expect(await history(t(), id)).toHaveLength(2);
  });

  it('benchmarks out of tolerance deverify a verified machine; an operator-deverified one stays so', async () => {
    const { host, uid, id } = await registered(t());
    await operatorSetVerification({ db: t().deps.db, now: t().clock.now() }, id, true);
    const r = await t().request('POST', `${P}/benchmarks`, {
      key: host.apiKey,
      body: report(uid, id, { gpu: gpu({ total_flops: 80 }) }),
    });
    expect(r.body.verification).toBe('deverified');
    expect(r.body.verification_reason).toContain('out of tolerance: matrix multiply 40 TFLOPS per GPU');
    await operatorSetVerification({ db: t().deps.db, now: t().clock.now() }, id, false);
    t().clock.advance(7200_000);
    const good = await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    // Already deverified by the rule, the operator's --unverify changed nothing; the rules may
    // verify it again.
    expect(good.body.verification).toBe('verified');
  });

  it('an operator deverification is not undone by good benchmarks', async () => {
    const { host, uid, id } = await registered(t());
    await operatorSetVerification({ db: t().deps.db, now: t().clock.now() }, id, false);
    t().clock.advance(7200_000);
    const r = await t().request('POST', `${P}/benchmarks`, { key: host.apiKey, body: report(uid, id) });
    expect(r.body.verification).toBe('deverified');
    expect(r.body.verification_reason).toContain('deverified by an operator');
  });

  it('a machine never advertises more than its last benchmark saw', async () => {
    const { host, uid, id } = await registered(t(), { num_gpus: 4, gpu_ram: 24564, dlperf: 300 });
    await t().request('POST', `${P}/benchmarks`, {
      key: host.apiKey,
      body: report(uid, id, { gpu: gpu({ count: 2, ram_mb: 24000 }) }),
    });
    expect(await machine(t(), id)).toMatchObject({ num_gpus: 2, gpu_ram: 24000, dlperf: 68.1 });
    // Registering the same hardware again does not bring the claims back.
    await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: [hw({ num_gpus: 4, gpu_ram: 24564, dlperf: 300 })] },
    });
    expect(await machine(t(), id)).toMatchObject({ num_gpus: 2, gpu_ram: 24000, dlperf: 68.1 });
  });

  it('claims beyond the last benchmark: the offer shows what it saw, another model deverifies', async () => {
    const { host, uid, id } = await registered(t(), { num_gpus: 4, dlperf: 300 });
    const reg = (over: Record<string, unknown>) =>
      t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: uid, machines: [hw(over)] },
      });
    const run = (g: Partial<GpuBenchmark>) => {
      t().clock.advance(1000);
      return t().request('POST', `${P}/benchmarks`, {
        key: host.apiKey,
        body: report(uid, id, { gpu: gpu(g) }),
      });
    };
    const renter = await t().user();
    const offer = async () => {
      const r = await t().request('POST', '/api/v0/bundles/', {
        key: renter.apiKey,
        body: { machine_id: { eq: id } },
      });
      expect(r.status, r.raw).toBe(200);
      expect(r.body.offers).toHaveLength(1);
      return r.body.offers[0] as Record<string, unknown>;
    };
    expect((await run({ count: 2 })).status).toBe(200);
    expect(await offer()).toMatchObject({ num_gpus: 2, gpu_ram: 24564, dlperf: 68.1 });
    // More GPUs, more memory and a larger dlperf claimed: the offer keeps what the run saw.
    expect((await reg({ num_gpus: 8, gpu_ram: 81920, dlperf: 999 })).status).toBe(200);
    expect(await offer()).toMatchObject({ gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, dlperf: 68.1 });
    // A run that sees more (GPUs added) raises it, up to the claims only.
    expect((await run({ count: 4 })).status).toBe(200);
    expect(await offer()).toMatchObject({ num_gpus: 4, gpu_ram: 24564 });
    expect((await run({ count: 16, ram_mb: 100_000 })).status).toBe(200);
    expect(await offer()).toMatchObject({ num_gpus: 8, gpu_ram: 81920 });
    expect((await run({ count: 4 })).status).toBe(200);
    // Another model claimed: its count and memory are no more than the run saw, and nothing of it
    // was measured (dlperf, total_flops 0).
    expect((await reg({ gpu_name: 'H100 SXM', num_gpus: 8, gpu_ram: 81920, dlperf: 999 })).status).toBe(200);
    expect(await offer()).toMatchObject({
      gpu_name: 'H100 SXM',
      num_gpus: 4,
      gpu_ram: 24564,
      dlperf: 0,
      total_flops: 0,
      verification: 'unverified',
    });
    // A run that still sees the old model measures nothing of the claimed one either.
    const r = await run({ count: 4 });
    expect(r.body.verification).toBe('unverified');
    expect(await offer()).toMatchObject({ gpu_name: 'H100 SXM', num_gpus: 4, dlperf: 0, total_flops: 0 });
    // Nor does a run that saw no GPU at all bring the claims back at the next registration.
    t().clock.advance(1000);
    const blind = await t().request('POST', `${P}/benchmarks`, {
      key: host.apiKey,
      body: report(uid, id, { gpu: { error: 'no NVIDIA GPU: nvidia-smi did not answer' } }),
    });
    expect(blind.status).toBe(200);
    expect((await reg({ gpu_name: 'H100 SXM', num_gpus: 8, gpu_ram: 81920, dlperf: 999 })).status).toBe(200);
    expect(await offer()).toMatchObject({ num_gpus: 4, gpu_ram: 24564, dlperf: 0 });
    // Verified, the same claim deverifies it, naming the change.
    expect((await reg({ num_gpus: 4, dlperf: 300 })).status).toBe(200);
    expect((await run({ count: 4 })).status).toBe(200);
    await operatorSetVerification({ db: t().deps.db, now: t().clock.now() }, id, true);
    const again = await reg({ gpu_name: 'H100 SXM', num_gpus: 8, gpu_ram: 81920, dlperf: 999 });
    expect(again.body.machines[0].verification).toBe('deverified');
    expect((await history(t(), id)).at(-1)!.reason).toBe(
      'hardware or driver changed at re-registration: gpu_name "RTX 4090" → "H100 SXM"',
    );
    expect(await offer()).toMatchObject({ num_gpus: 4, gpu_ram: 24564, dlperf: 0 });
  });

  it('repeated failed starts reported by the agent deverify a verified machine, recorded and e-mailed', async () => {
    const { host, uid, id } = await registered(t());
    await operatorSetVerification({ db: t().deps.db, now: t().clock.now() }, id, true);
    const renter = await renterWithKey(t(), { balanceUsd: 1000 });
    const other = await renterWithKey(t(), { balanceUsd: 1000 });
    let by = renter;
    const sync = (instances: unknown[]) =>
      t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: uid, machine_ids: [id], instances },
      });
    const start = async (outcome: 'exited' | 'running' | 'ran-then-exited') => {
      t().clock.advance(60_000);
      const r = await t().request('PUT', `/api/v0/asks/${id}/`, {
        key: by.apiKey,
        body: { image: 'ubuntu:22.04', disk: 10 },
      });
      expect(r.status, r.raw).toBe(200);
      const iid = r.body.new_contract as number;
      expect((await sync([{ id: iid, state: 'loading', status_msg: 'pulling' }])).status).toBe(200);
      if (outcome !== 'exited')
        expect((await sync([{ id: iid, state: 'running', ssh_port: 40022 }])).status).toBe(200);
      if (outcome !== 'running')
        expect(
          (await sync([{ id: iid, state: 'exited', status_msg: 'failed to start: no such image' }])).status,
        ).toBe(200);
      // Destroyed, so the machine is free for the next start.
      expect(
        (await t().request('DELETE', `/api/v0/instances/${iid}/`, { key: by.apiKey, body: {} })).status,
      ).toBe(200);
      return iid;
    };
    // One renter's own failures alone (a broken image of theirs) never take the badge.
    for (let i = 0; i < 3; i++) await start('exited');
    expect(await machine(t(), id)).toMatchObject({ verified: 1, verification: 'verified' });
    // An instance that ran and exited is not a failed start: two more failures after it, from two
    // renters, are not three in a row.
    await start('ran-then-exited');
    await start('exited');
    by = other;
    await start('exited');
    expect(await machine(t(), id)).toMatchObject({ verified: 1, verification: 'verified' });
    // The third in a row, from two renters, deverifies it.
    by = renter;
    const third = await start('exited');
    expect(await machine(t(), id)).toMatchObject({ verified: 0, verification: 'deverified' });
    const h = await history(t(), id);
    expect(h.map((e) => [e.from_state, e.to_state, e.actor])).toEqual([
      ['unverified', 'verified', 'operator'],
      ['verified', 'deverified', 'rule'],
    ]);
    expect(h[1]!.reason).toMatch(
      /^3 starts in a row failed \(instances \d+, \d+, \d+ exited before running, rented by 2 renters/,
    );
    expect(h[1]!.reason).toContain(`${third} exited before running`);
    const sent = (await mails(t())).filter((m) => m.to_addr === host.email);
    expect(sent.map((m) => m.subject)).toContain(`Machine ${id} is now deverified`);
    const view = await t().request('GET', `/api/v0/machines/${id}/verification`, { key: host.apiKey });
    expect(view.body.history[0]).toMatchObject({ from: 'verified', to: 'deverified', by: 'rule' });
    // Verified again by an operator, the old failures no longer count: one more failure is not three.
    t().clock.advance(60_000);
    await operatorSetVerification({ db: t().deps.db, now: t().clock.now() }, id, true);
    await start('exited');
    expect((await machine(t(), id)).verified).toBe(1);
  });

  it("refuses another agent's machine and out-of-bounds figures", async () => {
    const { host, uid, id } = await registered(t());
    const other = await t().request('POST', `${P}/benchmarks`, {
      key: host.apiKey,
      body: report('agent-someone-else', id),
    });
    expect(other.status).toBe(404);
    const huge = await t().request('POST', `${P}/benchmarks`, {
      key: host.apiKey,
      body: report(uid, id, { gpu: gpu({ ram_mb: 1e300 }) }),
    });
    expect(huge.status).toBe(400);
    expect(
      await t().deps.db.selectFrom('machine_benchmarks').select('id').where('machine_id', '=', id).execute(),
    ).toEqual([]);
  });

  describe('registration bounds', () => {
    for (const [field, value] of [
      ['gpu_ram', 1e300],
      ['gpu_ram', 2_000_000],
      ['cpu_cores', 100_000],
      ['cpu_ghz', 1e9],
      ['cpu_ram', 1e12],
      ['disk_space', 1e300],
      ['cuda_max_good', 1e6],
      ['dlperf', 1e300],
    ] as const) {
      it(`refuses ${field} = ${value} with a 400 naming it, writing nothing`, async () => {
        const host = await t().user();
        const r = await t().request('POST', `${P}/register`, {
          key: host.apiKey,
          body: { agent_uid: 'agent-bounds-01', machines: [hw({ [field]: value })] },
        });
        expect(r.status).toBe(400);
        expect(r.body.msg).toContain(field);
        expect(
          await t().deps.db.selectFrom('machines').select('id').where('host_id', '=', host.id).execute(),
        ).toEqual([]);
      });
    }
  });

  it('of two verification changes from the same state at once, one applies and is recorded', async () => {
    const { id } = await registered(t());
    const m = (await machineById(t().deps.db, id))!;
    const ctx = () => ({ db: t().deps.db, now: t().clock.now(), rule: 'r' });
    const wins = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        t()
          .deps.store.db.transaction()
          .execute((trx) =>
            changeVerification(
              { ...ctx(), db: trx },
              m,
              i % 2 ? 'verified' : 'deverified',
              `try ${i}`,
              'rule',
            ),
          )
          .catch(() => false),
      ),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect(await history(t(), id)).toHaveLength(1);
    expect((await mails(t())).filter((x) => x.subject.startsWith(`Machine ${id} `))).toHaveLength(1);
  });

  it('the agent measures its network against the server', async () => {
    const host = await t().user();
    const down = await t().request('GET', `${P}/benchmarks/download?bytes=1000`, { key: host.apiKey });
    expect(down.status).toBe(200);
    expect(down.body.data).toHaveLength(1000);
    const up = await t().request('POST', `${P}/benchmarks/upload`, {
      key: host.apiKey,
      body: { data: 'y'.repeat(5000) },
    });
    expect(up.body).toEqual({ bytes: 5000 });
    const tooMuch = await t().request('GET', `${P}/benchmarks/download?bytes=${64 * 1024 * 1024}`, {
      key: host.apiKey,
    });
    expect(tooMuch.status).toBe(400);
  });
});

describeEachDb('benchmarks with OPENRIG_AUTO_VERIFY', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_AUTO_VERIFY: 'on' });

  it('a machine verified at its registration has that recorded, shown and e-mailed', async () => {
    const { host, id, reply } = await registered(t());
    expect(reply.machines[0].verification).toBe('verified');
    const h = await history(t(), id);
    expect(h).toMatchObject([
      {
        from_state: 'unverified',
        to_state: 'verified',
        actor: 'rule',
        reason: 'verified at registration (OPENRIG_AUTO_VERIFY)',
      },
    ]);
    const sent = (await mails(t())).filter((m) => m.to_addr === host.email);
    expect(sent.map((m) => m.subject)).toEqual([`Machine ${id} is now verified`]);
    const view = await t().request('GET', `/api/v0/machines/${id}/verification`, { key: host.apiKey });
    expect(view.body.history).toMatchObject([{ from: 'unverified', to: 'verified', by: 'rule' }]);
  });
});
