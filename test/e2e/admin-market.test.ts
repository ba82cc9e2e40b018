// `openrig admin create-machines` as a real process (operator contract): prints
// {"machine_ids": [...]}, and the machines are listed offers a renter can find and rent.
import { afterAll, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli, startServe } from '../helpers/process.js';

const dir = mkdtempSync(path.join(tmpdir(), 'openrig-market-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ENV = { OPENRIG_SECRET_KEY: 'cd'.repeat(32) };

it('creates listed machines that the market offers and a renter can rent', async () => {
  const host = JSON.parse(
    (await runCli(['admin', 'create-user', '--data', dir, '--email', 'host@example.com'], ENV)).stdout,
  );
  const renter = JSON.parse(
    (
      await runCli(
        ['admin', 'create-user', '--data', dir, '--email', 'renter@example.com', '--balance', '10'],
        ENV,
      )
    ).stdout,
  );
  const made = await runCli(
    [
      'admin',
      'create-machines',
      '--data',
      dir,
      '--owner-email',
      'host@example.com',
      '--gpu-name',
      'RTX 4090',
      '--num-gpus',
      '2',
      '--count',
      '3',
      '--price-gpu',
      '0.5',
      '--json',
    ],
    ENV,
  );
  expect(made.code).toBe(0);
  const out = JSON.parse(made.stdout);
  expect(Object.keys(out)).toEqual(['machine_ids']);
  expect(out.machine_ids).toHaveLength(3);
  const bad = await runCli(
    [
      'admin',
      'create-machines',
      '--data',
      dir,
      '--owner-email',
      'nobody@example.com',
      '--gpu-name',
      'X',
      '--num-gpus',
      '1',
    ],
    ENV,
  );
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain('nobody@example.com');

  const srv = await startServe(['--data', dir], ENV);
  const api = async (method: string, p: string, key: string, body?: unknown) => {
    const r = await fetch(srv.url + p, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const mine = await api('GET', '/api/v0/machines/', host.api_key);
  expect(mine.body.machines.map((m: { id: number }) => m.id)).toEqual(out.machine_ids);
  const found = await api('POST', '/api/v0/bundles/', renter.api_key, {
    verified: { eq: true },
    external: { eq: false },
    rentable: { eq: true },
    rented: { eq: false },
    gpu_name: { eq: 'RTX 4090' },
    num_gpus: { eq: '2' },
    order: [['score', 'desc']],
    type: 'on-demand',
  });
  expect(found.body.offers.map((o: { id: number }) => o.id).sort()).toEqual([...out.machine_ids].sort());
  expect(
    (
      await api('POST', '/api/v0/ssh/', renter.api_key, {
        ssh_key:
          'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl renter@laptop',
      })
    ).status,
  ).toBe(200);
  const rent = await api('PUT', `/api/v0/asks/${out.machine_ids[0]}/`, renter.api_key, {
    image: 'ubuntu:22.04',
    disk: 10,
  });
  expect(rent.status).toBe(200);
  // No agent: the instance stays provisioning (actual_status null).
  const shown = await api('GET', `/api/v0/instances/${rent.body.new_contract}/`, renter.api_key);
  expect(shown.body.instances.actual_status).toBeNull();
  srv.child.kill('SIGTERM');
  await srv.exited;
});
