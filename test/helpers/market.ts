// Helpers for market tests: a renter with an SSH key, listed offers, a rented instance running.
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { insertMachines } from '../../src/server/modules/machines/machines.service.js';
import { reportInstanceStatus } from '../../src/server/modules/instances/instances.moves.js';

export const PUB =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl renter@laptop';
export const PUB2 =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH other@box';

export async function renter(t: TestApp, over: Parameters<TestApp['user']>[0] = {}) {
  const u = await t.user(over);
  const r = await t.request('POST', '/api/v0/ssh/', { key: u.apiKey, body: { ssh_key: PUB } });
  expect(r.status).toBe(200);
  return u;
}

export async function offers(
  t: TestApp,
  n: number,
  over: { priceGpu?: number; numGpus?: number; minBid?: number; priceDisk?: number } = {},
): Promise<number[]> {
  const host = await t.user();
  return insertMachines(
    t.deps.db,
    Array.from({ length: n }, () => ({
      hostId: host.id,
      gpuName: 'RTX 4090',
      numGpus: over.numGpus ?? 1,
      priceGpu: over.priceGpu ?? 0.5,
      minBid: over.minBid,
      priceDisk: over.priceDisk,
    })),
    t.clock.now(),
  );
}

/**
 * Rents `machine` for `key` (image x, a 72 GB disk, and what `body` adds) and reports the instance
 * running, as its agent would; its id.
 */
export async function runningInstance(
  t: TestApp,
  key: string,
  machine: number,
  body: Record<string, unknown> = {},
): Promise<number> {
  const r = await t.request('PUT', `/api/v0/asks/${machine}/`, {
    key,
    body: { image: 'x', disk: 72, ...body },
  });
  expect(r.status).toBe(200);
  const id = r.body.new_contract as number;
  await reportInstanceStatus(t.deps, id, 'running');
  return id;
}

/** One machine as an agent registers it (POST /api/agent/v1/register): slot `slot`, one RTX 4090. */
export const agentMachine = (slot: number, over: Record<string, unknown> = {}) => ({
  slot,
  hostname: `h${slot}`,
  gpu_name: 'RTX 4090',
  num_gpus: 1,
  gpu_ram: 24564,
  cpu_ram: 64000,
  disk_space: 500,
  ...over,
});

/** A query string of JSON-valued parameters (the v1 lists' select_filters, order_by …); strings as they are. */
export function jsonQuery(q: Record<string, unknown>): string {
  return new URLSearchParams(
    Object.entries(q).map(([k, x]): [string, string] => [k, typeof x === 'string' ? x : JSON.stringify(x)]),
  ).toString();
}
