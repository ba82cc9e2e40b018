// `openrig show instance` lists each published port with the address it is reached at, and gives
// the SSH command with `-i` when the key the instance accepts is one ssh would not try by itself.
// A real `serve`; the host is driven through the agent protocol by the test (a container host
// that published 8080 on 40973), and the CLI runs as a subprocess with its own HOME.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { callApi } from '../helpers/process.js';
import { cli, createUser, startWorld, type CliWorld } from './cli-harness.js';

describe('openrig show instance: ports and the SSH key', () => {
  let w: CliWorld;
  let renter: { id: number; api_key: string };
  let home: string;
  let keyFile: string;
  let id: number;

  const api = async (method: string, p: string, key: string, body?: unknown) => {
    const r = await callApi(w.url, method, p, key, body);
    expect(r.status, `${method} ${p}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
    return r.body;
  };

  beforeAll(async () => {
    w = await startWorld();
    const host = await createUser(w, 'host@example.com');
    renter = await createUser(w, 'renter@example.com');
    // The renter's key is outside ~/.ssh: ssh would not try it without -i.
    home = mkdtempSync(path.join(tmpdir(), 'openrig-cli-home-'));
    keyFile = path.join(home, 'keys', 'rig_key');
    execFileSync('mkdir', ['-p', path.dirname(keyFile)]);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter@laptop', '-f', keyFile]);
    await api('POST', '/api/v0/ssh/', renter.api_key, {
      ssh_key: readFileSync(`${keyFile}.pub`, 'utf8').trim(),
    });
    const uid = `cli-ports-${process.pid}`;
    const reg = await api('POST', '/api/agent/v1/register', host.api_key, {
      agent_uid: uid,
      runtime: 'docker',
      price_gpu: 0.3,
      public_host: '127.0.0.1',
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
    });
    const machine = reg.machines[0].machine_id as number;
    const offers = (await api('POST', '/api/v0/bundles/', renter.api_key, { machine_id: { eq: machine } }))
      .offers;
    id = (
      await api('PUT', `/api/v0/asks/${offers[0].id}/`, renter.api_key, {
        image: 'ubuntu:22.04',
        disk: 5,
        runtype: 'ssh',
        env: { '-p 8080:8080': '1' },
      })
    ).new_contract;
    await api('POST', '/api/agent/v1/sync', host.api_key, {
      agent_uid: uid,
      machine_ids: [machine],
      instances: [
        {
          id,
          state: 'running',
          ssh_port: 40022,
          ports: {
            '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '40022' }],
            '8080/tcp': [{ HostIp: '0.0.0.0', HostPort: '40973' }],
          },
        },
      ],
    });
  });
  afterAll(() => w?.stop());

  it('lists 8080 → 40973 with its address, and the SSH command with -i and the key file', async () => {
    const r = await cli(home, ['show', 'instance', String(id)], {
      OPENRIG_URL: w.url,
      OPENRIG_API_KEY: renter.api_key,
      OPENRIG_SSH_KEY: keyFile,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Ports:\s+8080\/tcp → 40973 \(127\.0\.0\.1:40973\)$/m);
    expect(r.stdout).toMatch(/^SSH:\s+ssh -i ~\/keys\/rig_key -p 40022 root@127\.0\.0\.1$/m);
  });
});
