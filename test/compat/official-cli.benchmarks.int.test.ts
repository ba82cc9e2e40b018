// The official CLI against benchmarked machines, each request exactly as the CLI builds it:
// `search offers` with every filter of its field list that a benchmark fills (dlperf, total_flops,
// gpu_mem_bw, pcie_bw, flops_usd and dlperf_usd under the names the CLI sends, cpu_arch, …) and
// `search benchmarks` (a GET with select_cols and select_filters, underscores sent as spaces).
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp, type TestApp } from '../helpers/app.js';
import { cli, expectOk, f } from './official-cli.js';
import { operatorSetVerification } from '../../src/server/modules/benchmarks/benchmarks.service.js';

const P = '/api/agent/v1';

const DEFAULT_SEARCH = {
  verified: { eq: true },
  external: { eq: false },
  rentable: { eq: true },
  rented: { eq: false },
};

/** A host's agent registers one machine and posts one benchmark run of it; an operator verifies it. */
async function benchmarked(t: TestApp, gpu: Record<string, unknown>, uid: string) {
  const host = await t.user();
  const reg = await t.request('POST', `${P}/register`, {
    key: host.apiKey,
    body: {
      agent_uid: uid,
      price_gpu: 0.5,
      machines: [
        {
          slot: 0,
          hostname: 'h',
          gpu_name: 'RTX 4090',
          num_gpus: 2,
          gpu_ram: 24564,
          cpu_name: 'AMD EPYC 7B13',
          cpu_cores: 32,
          cpu_ram: 128000,
          disk_space: 500,
          driver_version: '550.54.14',
          cuda_max_good: 12.4,
          dlperf: 5,
        },
      ],
    },
  });
  const id = reg.body.machines[0].machine_id as number;
  const run = await t.request('POST', `${P}/benchmarks`, {
    key: host.apiKey,
    body: {
      agent_uid: uid,
      machine_id: id,
      version: '0.1.0',
      trigger: 'registration',
      cpu: { name: 'AMD EPYC 7B13', arch: 'amd64', cores: 32, ghz: 3.5, score: 1500, has_avx: true },
      mem_bw: 12,
      disk_bw: 1800,
      inet_up: 900,
      inet_down: 950,
      system: { ubuntu_version: '22.04', mobo_name: 'MZ32-AR0' },
      gpu: {
        name: 'RTX 4090',
        count: 2,
        ram_mb: 24564,
        driver: '550.54.14',
        compute_cap: 890,
        pci_gen: 4,
        pcie_bw: 24.5,
        gpu_mem_bw: 905,
        total_flops: 250,
        power_limit: 450,
        max_temp: 87,
        display_active: false,
        nvlink_bw: 0,
        cuda: 'PyTorch on 2 GPU(s)',
        ...gpu,
      },
      seconds: 3,
    },
  });
  expect(run.status).toBe(200);
  await operatorSetVerification({ db: t.deps.db, now: t.clock.now() }, id, true);
  await t.deps.db.updateTable('machines').set({ reliability: 0.97 }).where('id', '=', id).execute();
  return id;
}

describeEachDb('official CLI: benchmarks', (dialect) => {
  const t = useTestApp(dialect);

  it('search offers: every filter the CLI sends on benchmarked fields is served, and picks the right machines', async () => {
    const fast = await benchmarked(t(), {}, 'agent-bench-fast');
    const slow = await benchmarked(
      t(),
      { total_flops: 20, gpu_mem_bw: 300, pcie_bw: 6, pci_gen: 3 },
      'agent-bench-slow',
    );
    const renter = await t().user();
    const search = async (filters: Record<string, unknown>) => {
      const r = await cli(t(), {
        method: 'POST',
        path: '/bundles/',
        key: renter.apiKey,
        json: {
          ...DEFAULT_SEARCH,
          ...filters,
          order: [['score', 'desc']],
          type: 'on-demand',
          allocated_storage: f(5),
        },
      });
      expectOk(r);
      return (r.body.offers as { id: number }[]).map((o) => o.id).filter((id) => id === fast || id === slow);
    };
    // `vastai search offers 'dlperf>10 reliability>0.9'`: the slow machine's measured dlperf is 9.
    expect(await search({ dlperf: { gt: '10' }, reliability: { gt: '0.9' } })).toEqual([fast]);
    // Everything else a benchmark fills, as `--explain` shows the CLI sends it.
    expect(
      await search({
        total_flops: { gte: '100' },
        gpu_mem_bw: { gt: '800' },
        pcie_bw: { gte: '8' },
        flops_per_dphtotal: { gt: '0.1' },
        dlperf_per_dphtotal: { gt: '1' },
        cpu_ghz: { gt: '1' },
        pci_gen: { gte: '4' },
        compute_cap: { gte: '800' },
        cpu_arch: { eq: 'amd64' },
        has_avx: { eq: true },
        gpu_arch: { eq: 'nvidia' },
        ubuntu_version: { eq: '22.04' },
        static_ip: { eq: false },
        gpu_display_active: { eq: false },
        bw_nvlink: { gte: '0' },
        gpu_max_power: { gt: '100' },
        gpu_max_temp: { gte: '80' },
        mobo_name: { neq: 'x' },
        disk_bw: { gt: '100' },
        inet_up: { gt: '10' },
        inet_down: { gt: '10' },
      }),
    ).toEqual([fast]);
    expect(await search({ pci_gen: { lt: '4' } })).toEqual([slow]);
    // The CLI orders by them too (`-o total_flops-`).
    const ordered = await cli(t(), {
      method: 'POST',
      path: '/bundles/',
      key: renter.apiKey,
      json: {
        ...DEFAULT_SEARCH,
        order: [['total_flops', 'desc']],
        type: 'on-demand',
        allocated_storage: f(5),
      },
    });
    expectOk(ordered);
    const ids = (ordered.body.offers as { id: number }[]).map((o) => o.id);
    expect(ids.indexOf(fast)).toBeLessThan(ids.indexOf(slow));
  });

  it('search benchmarks: the rows of a query, with the fields the CLI reads', async () => {
    const id = await benchmarked(t(), {}, 'agent-bench-rows');
    const renter = await t().user();
    // `vastai search benchmarks 'score > 100.0 name=total_flops machine_id in [ID]'`
    const r = await cli(t(), {
      method: 'GET',
      path: '/benchmarks',
      key: renter.apiKey,
      query: {
        select_cols: ['*'],
        select_filters: {
          score: { gt: '100.0' },
          name: { eq: 'total flops' },
          machine_id: { in: [String(id)] },
        },
      },
    });
    expectOk(r);
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
        last_update: expect.any(Number),
      },
    ]);
    // `vastai search benchmarks` with no query lists them all; `model=RTX_4090` is sent with a space.
    const all = await cli(t(), {
      method: 'GET',
      path: '/benchmarks',
      key: renter.apiKey,
      query: { select_cols: ['*'], select_filters: { model: { eq: 'RTX 4090' } } },
    });
    expectOk(all);
    expect(
      all.body
        .filter((b: { machine_id: number }) => b.machine_id === id)
        .map((b: { name: string }) => b.name),
    ).toEqual(expect.arrayContaining(['dlperf', 'total_flops', 'gpu_mem_bw', 'pcie_bw', 'gpu_ram']));
  });
});
