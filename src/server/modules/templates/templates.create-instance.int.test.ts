// create instance with template_hash_id: the template fills what the body does not give, the
// body wins where it does, the merged body is checked as any create, and a template the caller
// may not use creates nothing.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';
import { balanceOf } from '../billing/billing.service.js';
import { cliCreateBody } from '../../../../test/compat/official-cli.js';

/** The official CLI's create body with --template_hash: no runtype, null for options not given. */
const cliBody = (hash: string, over: Record<string, unknown> = {}) => {
  const { runtype, ...body } = cliCreateBody({ image: null, disk: null, template_hash_id: hash, ...over });
  return 'runtype' in over ? { ...body, runtype } : body;
};

async function template(t: TestApp, key: string, over: Record<string, unknown> = {}) {
  const r = await t.request('POST', '/api/v0/template/', {
    key,
    body: {
      name: 'torch',
      image: 'pytorch/pytorch',
      tag: '2.3',
      env: '-e A=1 -e MSG="a b" -p 8080:8080',
      onstart: 'echo from-template',
      runtype: 'args',
      recommended_disk_space: 20,
      private: true,
      ...over,
    },
  });
  expect(r.status, r.raw).toBe(200);
  return r.body.template as { id: number; hash_id: string; name: string };
}

async function instanceRow(t: TestApp, id: number) {
  return t.deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function instanceCount(t: TestApp, userId: number): Promise<number> {
  const r = await t.deps.db
    .selectFrom('instances')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describeEachDb('create instance from a template', (dialect) => {
  const t = useTestApp(dialect);
  let me: { id: number; apiKey: string };
  let other: { id: number; apiKey: string };
  let pool: number[];
  beforeAll(async () => {
    me = await renter(t());
    other = await renter(t());
    pool = await offers(t(), 10, { numGpus: 1 });
  });

  it('takes image:tag, env, onstart, runtype and disk from the template; the row names it', async () => {
    const tpl = await template(t(), me.apiKey);
    const r = await t().request('PUT', `/api/v0/asks/${pool[0]}/`, {
      key: me.apiKey,
      body: cliBody(tpl.hash_id),
    });
    expect(r.status, r.raw).toBe(200);
    const row = await instanceRow(t(), r.body.new_contract);
    expect(row).toMatchObject({
      image: 'pytorch/pytorch:2.3',
      onstart: 'echo from-template',
      runtype: 'args',
      disk: 20,
      template_id: tpl.id,
      template_name: 'torch',
      template_hash_id: tpl.hash_id,
    });
    expect(JSON.parse(row.env)).toEqual({ A: '1', MSG: 'a b', '-p 8080:8080': '1' });
    // The polled row and the v1 list show the template.
    const one = await t().request('GET', `/api/v0/instances/${r.body.new_contract}/`, { key: me.apiKey });
    expect(one.body.instances).toMatchObject({
      template_id: tpl.id,
      template_name: 'torch',
      template_hash_id: tpl.hash_id,
    });
    const cols = encodeURIComponent(JSON.stringify(['id', 'template_id', 'template_name']));
    const v1 = await t().request('GET', `/api/v1/instances/?select_cols=${cols}`, { key: me.apiKey });
    expect(v1.body.instances.find((x: { id: number }) => x.id === r.body.new_contract)).toEqual({
      id: r.body.new_contract,
      template_id: tpl.id,
      template_name: 'torch',
    });
  });

  it('lets the body win where it gives a field; env variables merge, the body’s on top', async () => {
    const tpl = await template(t(), me.apiKey);
    const r = await t().request('PUT', `/api/v0/asks/${pool[1]}/`, {
      key: me.apiKey,
      body: cliBody(tpl.hash_id, {
        image: 'ubuntu:22.04',
        env: { A: '2' },
        disk: 30,
        onstart: 'echo mine',
        runtype: 'ssh',
      }),
    });
    expect(r.status, r.raw).toBe(200);
    const row = await instanceRow(t(), r.body.new_contract);
    expect(row).toMatchObject({
      image: 'ubuntu:22.04',
      onstart: 'echo mine',
      runtype: 'ssh',
      disk: 30,
      template_id: tpl.id,
    });
    expect(JSON.parse(row.env)).toEqual({ A: '2', MSG: 'a b', '-p 8080:8080': '1' });
    // An instance without a template names none.
    const plain = await t().request('PUT', `/api/v0/asks/${pool[2]}/`, {
      key: me.apiKey,
      body: { image: 'ubuntu' },
    });
    const p = await instanceRow(t(), plain.body.new_contract);
    expect([p.template_id, p.template_name, p.template_hash_id]).toEqual([null, null, null]);
  });

  it("rents from another user's public template, never from their private one or an unknown hash", async () => {
    const pub = await template(t(), other.apiKey, { name: 'pub', private: false });
    const ok = await t().request('PUT', `/api/v0/asks/${pool[3]}/`, {
      key: me.apiKey,
      body: cliBody(pub.hash_id),
    });
    expect(ok.status, ok.raw).toBe(200);
    const priv = await template(t(), other.apiKey, { name: 'priv' });
    const balance = await balanceOf(t().deps.db, me.id);
    const before = await instanceCount(t(), me.id);
    for (const hash of [priv.hash_id, 'f'.repeat(32), 'x'.repeat(65)]) {
      const r = await t().request('PUT', `/api/v0/asks/${pool[4]}/`, { key: me.apiKey, body: cliBody(hash) });
      expect([400, 404], r.raw).toContain(r.status);
      expect(r.body.msg).toContain('template');
    }
    const bad = await t().request('PUT', `/api/v0/asks/${pool[4]}/`, {
      key: me.apiKey,
      body: cliBody(42 as never),
    });
    expect(bad.status).toBe(400);
    // A deleted template is no longer rentable.
    await t().request('DELETE', '/api/v0/template/', { key: other.apiKey, body: { hash_id: pub.hash_id } });
    const gone = await t().request('PUT', `/api/v0/asks/${pool[4]}/`, {
      key: me.apiKey,
      body: cliBody(pub.hash_id),
    });
    expect(gone.status).toBe(404);
    expect(await instanceCount(t(), me.id)).toBe(before);
    expect(await balanceOf(t().deps.db, me.id)).toBe(balance);
    const m = await t()
      .deps.db.selectFrom('machines')
      .select(['rented', 'disk_held_mb'])
      .where('id', '=', pool[4]!)
      .executeTakeFirstOrThrow();
    expect(Number(m.rented)).toBe(0);
    expect(Number(m.disk_held_mb)).toBe(0);
  });

  it('checks the merged body as any create: a bad override is a 400 and creates nothing', async () => {
    const tpl = await template(t(), me.apiKey);
    const before = await instanceCount(t(), me.id);
    for (const over of [
      { env: { CONTAINER_API_KEY: 'x' } },
      { disk: -1 },
      { runtype: 'rocket' },
      { env: 'A=1' },
    ]) {
      const r = await t().request('PUT', `/api/v0/asks/${pool[5]}/`, {
        key: me.apiKey,
        body: cliBody(tpl.hash_id, over),
      });
      expect(r.status, JSON.stringify(over)).toBe(400);
    }
    // The template's disk must still fit the offer.
    const big = await template(t(), me.apiKey, { recommended_disk_space: 900000 });
    const r = await t().request('PUT', `/api/v0/asks/${pool[5]}/`, {
      key: me.apiKey,
      body: cliBody(big.hash_id),
    });
    expect(r.status).toBe(400);
    expect(r.body.msg).toContain('disk');
    expect(await instanceCount(t(), me.id)).toBe(before);
  });

  it('Idempotency-Key: a retry with the same hash replays; with the updated template’s hash it is another request', async () => {
    const tpl = await template(t(), me.apiKey);
    const h = { 'idempotency-key': `tpl-${dialect}` };
    const first = await t().request('PUT', `/api/v0/asks/${pool[6]}/`, {
      key: me.apiKey,
      body: cliBody(tpl.hash_id),
      headers: h,
    });
    expect(first.status, first.raw).toBe(200);
    const u = await t().request('PUT', '/api/v0/template/', {
      key: me.apiKey,
      body: { hash_id: tpl.hash_id, image: 'debian' },
    });
    expect(u.status).toBe(200);
    const again = await t().request('PUT', `/api/v0/asks/${pool[6]}/`, {
      key: me.apiKey,
      body: cliBody(tpl.hash_id),
      headers: h,
    });
    expect(again.status).toBe(200);
    expect(again.body.new_contract).toBe(first.body.new_contract);
    const changed = await t().request('PUT', `/api/v0/asks/${pool[6]}/`, {
      key: me.apiKey,
      body: cliBody(u.body.template.hash_id),
      headers: h,
    });
    expect(changed.status).toBe(422);
    // The instance keeps the version it was made from.
    const row = await instanceRow(t(), first.body.new_contract);
    expect(row.image).toBe('pytorch/pytorch:2.3');
    expect(row.template_hash_id).toBe(tpl.hash_id);
  });
});
