// Account variables reach instances: each instance created after a variable is set gets it in
// its launch spec (the agent's sync), under the instance's own env and its template's, which
// win for the same name. The copy is made in the create's transaction and kept, encrypted, for
// the instance's life; the instance's views and lists never show it; a destroy forgets it.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { cliCreateBody } from '../../../../test/compat/official-cli.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';
import { decryptSecret } from '../../crypto.js';

const P = '/api/agent/v1';
const UID = 'agent-envvars-0001';

describeEachDb('account environment variables in instances', (dialect) => {
  const t = useTestApp(dialect);
  let host: { apiKey: string };
  let machines: number[];
  let u: { id: number; apiKey: string };

  beforeAll(async () => {
    host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: {
        agent_uid: UID,
        machines: [0, 1, 2, 3].map((s) => agentMachine(s)),
        price_gpu: 0.4,
        runtime: 'docker',
      },
    });
    expect(reg.status, reg.raw).toBe(200);
    machines = reg.body.machines.map((m: { machine_id: number }) => m.machine_id);
    u = await renter(t());
  });

  const setVar = async (method: 'POST' | 'PUT' | 'DELETE', key: string, value?: string) => {
    const r = await t().request(method, '/api/v0/secrets/', { key: u.apiKey, body: { key, value } });
    expect(r.status, r.raw).toBe(200);
  };
  const create = async (machine: number, over: Record<string, unknown> = {}) => {
    const r = await t().request('PUT', `/api/v0/asks/${machine}/`, {
      key: u.apiKey,
      body: cliCreateBody(over),
    });
    expect(r.status, r.raw).toBe(200);
    return r.body.new_contract as number;
  };
  const sync = async (reported: { id: number; state: string }[] = []) => {
    const s = await t().request('POST', `${P}/sync`, {
      key: host.apiKey,
      body: { agent_uid: UID, machine_ids: machines, instances: reported },
    });
    expect(s.status, s.raw).toBe(200);
    return new Map<number, { desired: string; env: Record<string, string> }>(
      s.body.instances.map((i: { id: number }) => [i.id, i]),
    );
  };
  const copyOf = (id: number) =>
    t()
      .deps.db.selectFrom('instance_account_env')
      .selectAll()
      .where('instance_id', '=', id)
      .executeTakeFirst();

  let first = 0;
  it("an instance created with none of the account's variables has no copy and only its own env", async () => {
    first = await create(machines[0]!, { env: { OWN: 'x' } });
    expect(await copyOf(first)).toBeUndefined();
    expect((await sync()).get(first)!.env).toEqual({ OWN: 'x' });
  });

  let second = 0;
  it('an instance created after variables are set gets them; its own env wins for the same name', async () => {
    await setVar('POST', 'HF_TOKEN', 'hf_secret_1');
    await setVar('POST', 'SHARED', 'from-account');
    await setVar('POST', 'MULTI', 'line 1\nline 2');
    second = await create(machines[1]!, { env: { SHARED: 'from-instance', '-p 8080:8080': '1' } });
    const spec = (await sync()).get(second)!;
    expect(spec.env).toEqual({
      HF_TOKEN: 'hf_secret_1',
      MULTI: 'line 1\nline 2',
      SHARED: 'from-instance',
    });
    // The instance made before the variables existed is unchanged.
    expect((await sync()).get(first)!.env).toEqual({ OWN: 'x' });
  });

  it('the copy is one encrypted value, not readable without the server key', async () => {
    const row = (await copyOf(second))!;
    expect(row.env_enc).not.toContain('hf_secret_1');
    expect(row.env_enc).not.toContain('HF_TOKEN');
    expect(JSON.parse(decryptSecret(t().config.secretKey, row.env_enc)!)).toEqual({
      HF_TOKEN: 'hf_secret_1',
      MULTI: 'line 1\nline 2',
      SHARED: 'from-account',
    });
  });

  it("the instance's views and lists never show the account's values (extra_env is its own env)", async () => {
    const one = await t().request('GET', `/api/v0/instances/${second}/`, { key: u.apiKey });
    expect(one.status).toBe(200);
    expect(Object.fromEntries(one.body.instances.extra_env as [string, string][])).toEqual({
      SHARED: 'from-instance',
    });
    const v0 = await t().request('GET', '/api/v0/instances/', { key: u.apiKey });
    const v1 = await t().request('GET', '/api/v1/instances/', { key: u.apiKey });
    for (const r of [one, v0, v1]) {
      expect(r.status).toBe(200);
      expect(r.raw).not.toContain('hf_secret_1');
      expect(r.raw).not.toContain('HF_TOKEN');
      expect(r.raw).not.toContain('from-account');
    }
  });

  it('changes to the account apply to instances created after them; running ones keep their copy', async () => {
    await setVar('PUT', 'HF_TOKEN', 'hf_secret_2');
    await setVar('DELETE', 'MULTI');
    await setVar('POST', 'LATER', 'added');
    const third = await create(machines[2]!);
    const specs = await sync();
    expect(specs.get(third)!.env).toEqual({
      HF_TOKEN: 'hf_secret_2',
      LATER: 'added',
      SHARED: 'from-account',
    });
    expect(specs.get(second)!.env).toEqual({
      HF_TOKEN: 'hf_secret_1',
      MULTI: 'line 1\nline 2',
      SHARED: 'from-instance',
    });
    // A stop and a start keep the copy: the instance is the configuration it was created with.
    const stop = await t().request('PUT', `/api/v0/instances/${second}/`, {
      key: u.apiKey,
      body: { state: 'stopped' },
    });
    expect(stop.status, stop.raw).toBe(200);
    const start = await t().request('PUT', `/api/v0/instances/${second}/`, {
      key: u.apiKey,
      body: { state: 'running' },
    });
    expect(start.status, start.raw).toBe(200);
    expect((await sync()).get(second)!.env.HF_TOKEN).toBe('hf_secret_1');
  });

  it("a template's env wins over the account's too", async () => {
    const tpl = await t().request('POST', '/api/v0/template/', {
      key: u.apiKey,
      body: { name: 'envs', image: 'ubuntu', env: '-e SHARED=from-template -e TPL=1' },
    });
    expect(tpl.status, tpl.raw).toBe(200);
    const { runtype: _r, ...body } = cliCreateBody({
      image: null,
      template_hash_id: tpl.body.template.hash_id,
    });
    const r = await t().request('PUT', `/api/v0/asks/${machines[3]!}/`, { key: u.apiKey, body });
    expect(r.status, r.raw).toBe(200);
    const id = r.body.new_contract as number;
    expect((await sync()).get(id)!.env).toEqual({
      HF_TOKEN: 'hf_secret_2',
      LATER: 'added',
      SHARED: 'from-template',
      TPL: '1',
    });
    expect((await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey })).status).toBe(200);
  });

  it('a destroy forgets the copy; the agent is told to remove the instance with no env', async () => {
    expect(await copyOf(second)).toBeDefined();
    const d = await t().request('DELETE', `/api/v0/instances/${second}/`, { key: u.apiKey });
    expect(d.status, d.raw).toBe(200);
    expect(await copyOf(second)).toBeUndefined();
    const spec = (await sync([{ id: second, state: 'running' }])).get(second)!;
    expect(spec).toMatchObject({ desired: 'destroyed', env: {} });
  });

  it("another renter's instance never gets this account's variables", async () => {
    const other = await renter(t());
    const r = await t().request('PUT', `/api/v0/asks/${machines[1]!}/`, {
      key: other.apiKey,
      body: cliCreateBody(),
    });
    expect(r.status, r.raw).toBe(200);
    const id = r.body.new_contract as number;
    expect(await copyOf(id)).toBeUndefined();
    expect((await sync()).get(id)!.env).toEqual({});
  });
});
