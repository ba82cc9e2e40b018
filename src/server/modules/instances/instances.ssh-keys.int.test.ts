// SSH keys attached to an instance open that instance only: the agent's sync lists an attached key
// for that instance and no other, a detach takes it off at the next sync, and neither changes the
// account's key list. A key scoped to instances may attach, but never adds to the account.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { PUB, PUB2, agentMachine, renter } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';
const PUB3 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBERERERERERERERERERERERERERERERERERERERERER third@box';

/** A host with an agent and `n` machines; `keysOf(id)` is what its next sync says instance `id` accepts. */
async function agentHost(t: TestApp, uid: string, n: number) {
  const host = await t.user();
  const reg = await t.request('POST', `${P}/register`, {
    key: host.apiKey,
    body: {
      agent_uid: uid,
      machines: Array.from({ length: n }, (_, slot) => agentMachine(slot)),
      price_gpu: 0.4,
      price_disk: 0.1,
    },
  });
  expect(reg.status).toBe(200);
  const mids = (reg.body.machines as { machine_id: number }[]).map((m) => m.machine_id);
  async function keysOf(id: number): Promise<string[]> {
    const r = await t.request('POST', `${P}/sync`, {
      key: host.apiKey,
      body: { agent_uid: uid, machine_ids: mids, instances: [] },
    });
    expect(r.status).toBe(200);
    const d = (r.body.instances as { id: number; authorized_keys: string[] }[]).find((i) => i.id === id);
    return d?.authorized_keys ?? [];
  }
  return { mids, keysOf };
}

async function accountKeys(t: TestApp, key: string): Promise<string[]> {
  const r = await t.request('GET', '/api/v0/ssh/', { key });
  expect(r.status).toBe(200);
  return (r.body.ssh_keys as { public_key: string }[]).map((k) => k.public_key);
}

describeEachDb('SSH keys per instance', (dialect) => {
  const t = useTestApp(dialect);

  it('attach opens that instance only; the account and other instances are unchanged; detach revokes it', async () => {
    const u = await renter(t());
    const { mids, keysOf } = await agentHost(t(), 'agent-sshkeys-0001', 2);
    const create = async (mid: number) =>
      (await t().request('PUT', `/api/v0/asks/${mid}/`, { key: u.apiKey, body: { image: 'x' } })).body
        .new_contract as number;
    const a = await create(mids[0]!);
    const b = await create(mids[1]!);
    expect(await keysOf(a)).toEqual([PUB]);

    const att = await t().request('POST', `/api/v0/instances/${a}/ssh/`, {
      key: u.apiKey,
      body: { ssh_key: PUB2 },
    });
    expect(att.status).toBe(200);
    expect(await keysOf(a)).toEqual([PUB, PUB2]);
    expect(await keysOf(b)).toEqual([PUB]);
    expect(await accountKeys(t(), u.apiKey)).toEqual([PUB]);
    // The renter reads the same list (what `openrig ssh` matches its private keys against).
    const listed = async (id: number, key = u.apiKey) =>
      t().request('GET', `/api/v0/instances/${id}/ssh/`, { key });
    expect((await listed(a)).body).toEqual({
      success: true,
      ssh_keys: [{ public_key: PUB }, { public_key: PUB2 }],
    });
    expect((await listed(b)).body.ssh_keys).toEqual([{ public_key: PUB }]);
    const stranger = await t().user();
    expect((await listed(a, stranger.apiKey)).status).toBe(404);

    const det = await t().request('DELETE', `/api/v0/instances/${a}/ssh/${att.body.key_id}/`, {
      key: u.apiKey,
      body: {},
    });
    expect(det.status).toBe(200);
    expect(await keysOf(a)).toEqual([PUB]);
    expect(await accountKeys(t(), u.apiKey)).toEqual([PUB]);
  });

  it('detaching an account key from one instance leaves it on the others and in the account', async () => {
    const u = await renter(t());
    const { mids, keysOf } = await agentHost(t(), 'agent-sshkeys-0003', 2);
    const ids: number[] = [];
    for (const mid of mids)
      ids.push(
        (await t().request('PUT', `/api/v0/asks/${mid}/`, { key: u.apiKey, body: { image: 'x' } })).body
          .new_contract,
      );
    const keyId = (await t().request('GET', '/api/v0/ssh/', { key: u.apiKey })).body.ssh_keys[0].id as number;
    const det = await t().request('DELETE', `/api/v0/instances/${ids[0]}/ssh/${keyId}/`, {
      key: u.apiKey,
      body: {},
    });
    expect(det.status).toBe(200);
    expect(await keysOf(ids[0]!)).toEqual([]);
    expect(await keysOf(ids[1]!)).toEqual([PUB]);
    expect(await accountKeys(t(), u.apiKey)).toEqual([PUB]);
    // Deleting the account key takes it off every instance.
    expect((await t().request('DELETE', `/api/v0/ssh/${keyId}/`, { key: u.apiKey, body: {} })).status).toBe(
      200,
    );
    expect(await keysOf(ids[1]!)).toEqual([]);
  });

  it('a key scoped to instances may attach but never writes the account key list', async () => {
    const u = await renter(t());
    const { mids, keysOf } = await agentHost(t(), 'agent-sshkeys-0004', 1);
    const id = (await t().request('PUT', `/api/v0/asks/${mids[0]}/`, { key: u.apiKey, body: { image: 'x' } }))
      .body.new_contract as number;
    const scoped = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'ci', permissions: { instances: 'write' } },
    });
    expect(scoped.status).toBe(200);
    const att = await t().request('POST', `/api/v0/instances/${id}/ssh/`, {
      key: scoped.body.key,
      body: { ssh_key: PUB3 },
    });
    expect(att.status).toBe(200);
    expect(await keysOf(id)).toEqual([PUB, PUB3]);
    expect(await accountKeys(t(), u.apiKey)).toEqual([PUB]);
    const direct = await t().request('POST', '/api/v0/ssh/', {
      key: scoped.body.key,
      body: { ssh_key: PUB3 },
    });
    expect(direct.status).toBe(403);
    // Registering the same key on the account later makes an account key; the instance keeps it once.
    expect(
      (await t().request('POST', '/api/v0/ssh/', { key: u.apiKey, body: { ssh_key: PUB3 } })).status,
    ).toBe(200);
    expect(await keysOf(id)).toEqual([PUB, PUB3]);
  });
});
