// OFFER_FIELDS' usesNow and usesPlan flags: the offer index keeps rows sorted by a plan's
// order across searches, which is right only for keys that do not move with the clock, and the
// search reply keeps each row's JSON for the fields that depend on nothing but the row. A field
// whose value depends on JsContext.now, or on the plan's type or storage, must say so.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { OFFER_FIELDS, type OfferRow } from './offers.fields.js';

const NOW = 1_800_000_000_000;

const rowArb: fc.Arbitrary<OfferRow> = fc.record({
  id: fc.nat(),
  host_id: fc.nat(),
  gpu_name: fc.constantFrom('RTX 4090', 'A100 SXM4'),
  num_gpus: fc.integer({ min: 1, max: 8 }),
  gpu_ram: fc.nat(),
  cpu_name: fc.string(),
  cpu_cores: fc.nat(),
  cpu_ghz: fc.double({ min: 0, max: 10, noNaN: true }),
  cpu_ram: fc.nat(),
  disk_space: fc.double({ min: 0, max: 1e4, noNaN: true }),
  disk_held_mb: fc.nat(),
  disk_bw: fc.double({ min: 0, max: 1e4, noNaN: true }),
  inet_up: fc.double({ min: 0, max: 1e4, noNaN: true }),
  inet_down: fc.double({ min: 0, max: 1e4, noNaN: true }),
  pcie_bw: fc.double({ min: 0, max: 100, noNaN: true }),
  direct_port_count: fc.nat(),
  cuda_max_good: fc.double({ min: 0, max: 13, noNaN: true }),
  driver_version: fc.string(),
  reliability: fc.double({ min: 0, max: 1, noNaN: true }),
  verified: fc.constantFrom(0, 1),
  geolocation: fc.string(),
  dlperf: fc.double({ min: 0, max: 500, noNaN: true }),
  listed: fc.constantFrom(0, 1),
  price_gpu_dph: fc.double({ min: 0, max: 10, noNaN: true }),
  price_disk_gb_month: fc.double({ min: 0, max: 1, noNaN: true }),
  min_bid_dph: fc.double({ min: 0, max: 10, noNaN: true }),
  rented: fc.constantFrom(0, 1),
  bid_to_win_dph: fc.option(fc.constantFrom(0.2, 0.500001)),
  listed_until: fc.option(fc.integer({ min: NOW - 10_000, max: NOW + 10_000 }), { nil: null }),
  score: fc.double({ min: 0, max: 1e3, noNaN: true }),
  online_state: fc.constantFrom('online', 'offline', 'unknown'),
  has_heartbeat: fc.boolean(),
  gpu_mem_bw: fc.double({ min: 0, max: 4000, noNaN: true }),
  total_flops: fc.double({ min: 0, max: 2000, noNaN: true }),
  pci_gen: fc.constantFrom(0, 3, 4, 5),
  compute_cap: fc.constantFrom(0, 750, 860, 890),
  cpu_arch: fc.constantFrom('', 'amd64', 'arm64'),
  has_avx: fc.constantFrom(0, 1),
  ubuntu_version: fc.constantFrom('', '22.04', '24.04'),
  gpu_arch: fc.constantFrom('', 'nvidia'),
  gpu_max_power: fc.double({ min: 0, max: 700, noNaN: true }),
  gpu_max_temp: fc.double({ min: 0, max: 100, noNaN: true }),
  gpu_display_active: fc.constantFrom(0, 1),
  bw_nvlink: fc.double({ min: 0, max: 900, noNaN: true }),
  mobo_name: fc.string(),
  static_ip: fc.constantFrom(0, 1),
  verification: fc.constantFrom('unverified', 'verified', 'deverified'),
});

describe('offer fields: usesNow, usesPlan', () => {
  const ctxArb = fc.record({
    bid: fc.boolean(),
    storage: fc.double({ min: 0, max: 1e4, noNaN: true }),
    now: fc.integer({ min: NOW - 20_000, max: NOW + 20_000 }),
  });

  it('a field without usesNow has the same value at any time', () => {
    fc.assert(
      fc.property(rowArb, ctxArb, fc.integer({ min: NOW - 20_000, max: NOW + 20_000 }), (row, ctx, later) => {
        for (const [name, def] of Object.entries(OFFER_FIELDS)) {
          if (def.usesNow) continue;
          expect(def.js(row, { ...ctx, now: later }), name).toEqual(def.js(row, ctx));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a field marked neither usesNow nor usesPlan has the same value in any context', () => {
    fc.assert(
      fc.property(rowArb, ctxArb, ctxArb, (row, a, b) => {
        for (const [name, def] of Object.entries(OFFER_FIELDS)) {
          if (def.usesNow || def.usesPlan) continue;
          expect(def.js(row, b), name).toEqual(def.js(row, a));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('each field marked usesPlan does change with the type or the storage for some row', () => {
    const row = {
      ...fc.sample(rowArb, { numRuns: 1, seed: 7 })[0]!,
      price_gpu_dph: 1,
      num_gpus: 2,
      min_bid_dph: 0.5,
      price_disk_gb_month: 0.1,
      dlperf: 100,
    };
    for (const [name, def] of Object.entries(OFFER_FIELDS)) {
      if (!def.usesPlan) continue;
      const a = def.js(row, { bid: false, storage: 0, now: NOW });
      const b = def.js(row, { bid: true, storage: 0, now: NOW });
      const c = def.js(row, { bid: false, storage: 100, now: NOW });
      expect(a === b && a === c, name).toBe(false);
    }
  });

  it('each field marked usesNow does change with the time for some row (the mark is not spent on a constant)', () => {
    const row = fc.sample(rowArb, { numRuns: 1, seed: 7 })[0]!;
    const live = { ...row, listed: 1, rented: 0, online_state: 'online', listed_until: NOW + 5_000 };
    for (const [name, def] of Object.entries(OFFER_FIELDS)) {
      if (!def.usesNow) continue;
      const ctx = { bid: false, storage: 0, now: NOW };
      expect(def.js(live, { ...ctx, now: NOW + 10_000 }), name).not.toEqual(def.js(live, ctx));
    }
  });
});
