// Seeds a fresh database for bench/run.mjs, directly with SQL through the built program's own
// store and migrations (dist/): 50,000 offers (listed machines), 10,000 live instances, users
// with API keys. Deterministic (seeded PRNG) so runs compare.
import { performance } from 'node:perf_hooks';
import { dist as distModule } from './bench-lib.mjs';

const dist = (p) => distModule(`server/${p}`);

function prng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const GPUS = [
  ['RTX 4090', 24576, 80],
  ['RTX 3090', 24576, 40],
  ['RTX 4080', 16384, 55],
  ['RTX A6000', 49152, 60],
  ['A100 SXM4', 81920, 140],
  ['H100 SXM', 81920, 260],
  ['L40S', 46080, 110],
  ['A40', 46080, 65],
];

export async function seed(
  databaseUrl,
  { offers = 50_000, instances = 10_000, renters = 1_000, hosts = 50, log = () => {} } = {},
) {
  const { openStore } = await dist('db/connection.js');
  const { migrateToLatest } = await dist('db/migrate.js');
  const { createUser } = await dist('modules/accounts/accounts.service.js');
  const store = openStore(databaseUrl);
  await migrateToLatest(store);
  const db = store.db;
  const rnd = prng(42);
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const now = Date.now();
  const deps = { store, db, clock: { now: () => Date.now() } };
  const t0 = performance.now();

  const mkUsers = async (n, prefix) => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const u = await createUser(deps, {
        email: `${prefix}${i}@bench.example`,
        emailVerified: true,
        balanceUsd: 1_000_000,
      });
      out.push({ id: u.id, key: u.api_key });
    }
    return out;
  };
  const hostUsers = await mkUsers(hosts, 'host');
  const renterUsers = await mkUsers(renters, 'renter');
  const createHost = (await mkUsers(1, 'create-host'))[0];
  const maintHost = (await mkUsers(1, 'maint-host'))[0];
  const creators = await mkUsers(100, 'creator');
  log(`users: ${hosts + renters + 102} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const machine = (hostId, i, over = {}) => {
    const [gpu, ram, perf] = pick(GPUS);
    const n = pick([1, 1, 2, 2, 4, 8]);
    const price = Math.round(n * perf * (0.004 + rnd() * 0.004) * 1000) / 1000;
    return {
      host_id: hostId,
      hostname: `m${i}`,
      gpu_name: gpu,
      num_gpus: n,
      gpu_ram: ram,
      cpu_name: 'AMD EPYC 7543',
      cpu_cores: 8 * n,
      cpu_ghz: 2.8,
      cpu_ram: 32768 * n,
      disk_space: 500 + Math.floor(rnd() * 3500),
      disk_bw: 2000,
      inet_up: 100 + Math.floor(rnd() * 900),
      inet_down: 100 + Math.floor(rnd() * 900),
      pcie_bw: 12 + rnd() * 12,
      direct_port_count: Math.floor(rnd() * 200),
      cuda_max_good: 12.4,
      driver_version: '550.54.14',
      reliability: 0.9 + rnd() * 0.1,
      verified: rnd() < 0.8 ? 1 : 0,
      geolocation: pick(['US', 'DE', 'FR', 'CA', 'JP', 'SE']),
      dlperf: perf * n * (0.8 + rnd() * 0.4),
      listed: rnd() < 0.95 ? 1 : 0,
      rented: 0,
      price_gpu_dph: price,
      price_disk_gb_month: 0.1,
      min_bid_dph: price / 2,
      online_state: 'online',
      // Never heartbeated (as `admin create-machines` leaves them): the sweeps leave such machines
      // alone. With a timestamp, 60 s into the run the sweep would judge the 10,000 seeded
      // instances `unknown`, one transaction each, in the middle of the heartbeat scenario.
      last_heartbeat_at: null,
      created_at: now,
      ...over,
    };
  };
  const insertChunks = async (table, rows, returning) => {
    const ids = [];
    for (let i = 0; i < rows.length; i += 500) {
      let q = db.insertInto(table).values(rows.slice(i, i + 500));
      if (returning) {
        const r = await q.returning('id').execute();
        ids.push(...r.map((x) => Number(x.id)));
      } else await q.execute();
    }
    return ids;
  };

  // 50,000 offers: listed machines of the hosts (the create and maintenance hosts' included).
  const rows = [];
  for (let i = 0; i < offers - 200; i++) rows.push(machine(hostUsers[i % hosts].id, i));
  // Every 4th machine carries one of the live instances below: rented, as creating it would leave it.
  for (let i = 0; i < instances - 100; i++) rows[i * 4].rented = 1;
  const machineIds = await insertChunks('machines', rows, true);
  const createOffers = await insertChunks(
    'machines',
    Array.from({ length: 100 }, (_, i) =>
      machine(createHost.id, 1e6 + i, { listed: 1, verified: 1, direct_port_count: 100 }),
    ),
    true,
  );
  const maintMachines = await insertChunks(
    'machines',
    Array.from({ length: 100 }, (_, i) => machine(maintHost.id, 2e6 + i, { listed: 1, rented: 1 })),
    true,
  );
  log(`machines: ${offers} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // 10,000 live instances, one per machine (the database allows one live instance per machine);
  // 100 of them on the maintenance host's machines.
  const statuses = [
    'running',
    'running',
    'running',
    'running',
    'running',
    'running',
    'loading',
    null,
    'exited',
    'running',
  ];
  const inst = (machineId, userId, i) => ({
    machine_id: machineId,
    user_id: userId,
    image: 'pytorch/pytorch:latest',
    disk: 20,
    onstart: '',
    env: '{}',
    label: `job-${i}`,
    runtype: 'ssh',
    dph_compute: 0.5,
    dph_disk: 0.003,
    intended_status: 'running',
    actual_status: statuses[i % statuses.length],
    status_msg: '',
    ssh_host: '127.0.0.1',
    ssh_port: 20000 + (i % 40000),
    ports: '{}',
    start_date: now,
    created_at: now,
    billed_until: now,
  });
  const instRows = [];
  for (let i = 0; i < instances - 100; i++)
    instRows.push(inst(machineIds[i * 4], renterUsers[i % renters].id, i));
  for (let i = 0; i < 100; i++)
    instRows.push(inst(maintMachines[i], renterUsers[(i * 7) % renters].id, instances + i));
  const instanceIds = await insertChunks('instances', instRows, true);
  const byRenter = new Map();
  for (let i = 0; i < instRows.length; i++) {
    const u = instRows[i].user_id;
    if (!byRenter.has(u)) byRenter.set(u, []);
    byRenter.get(u).push(instanceIds[i]);
  }
  if (store.dialect === 'postgres') await (await import('kysely')).sql`analyze`.execute(db);
  log(`instances: ${instances} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await store.destroy();
  return {
    seconds: (performance.now() - t0) / 1000,
    polls: renterUsers.flatMap((u) => (byRenter.get(u.id) ?? []).map((id) => ({ key: u.key, id }))),
    renters: renterUsers,
    hosts: hostUsers,
    creators,
    createHost,
    createOffers,
    maintHost,
    maintMachines,
  };
}
