// update instance (PUT /api/v0/instances/update_template/{id}/): the given fields replace the
// instance's configuration, checked as create checks it; the generation moves up by one per
// update and the sync hands it to the agent; reports of the older container move nothing; races
// between updates are decided by the database; an older agent's machine is refused.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { agentMachine, offers, renter } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';
let agents = 0;

/** A host whose agent registered one machine (the process runtime unless `runtime` says docker). */
async function host(
  t: TestApp,
  o: { capable?: boolean; runtime?: 'process' | 'docker' } = {},
): Promise<{ key: string; uid: string; machine: number }> {
  const h = await t.user();
  const uid = `agent-update-${process.pid}-${++agents}`;
  const r = await t.request('POST', `${P}/register`, {
    key: h.apiKey,
    body: {
      agent_uid: uid,
      runtime: o.runtime ?? 'docker',
      price_gpu: 0.4,
      ...(o.capable === false ? {} : { config_generations: true }),
      machines: [agentMachine(0)],
    },
  });
  expect(r.status, r.raw).toBe(200);
  expect(r.body.config_generations).toBe(true);
  return { key: h.apiKey, uid, machine: r.body.machines[0].machine_id as number };
}

type Desired = { id: number; generation?: number; image: string; env: Record<string, string> } & Record<
  string,
  unknown
>;

async function sync(t: TestApp, h: { key: string; uid: string; machine: number }, instances: unknown[]) {
  const r = await t.request('POST', `${P}/sync`, {
    key: h.key,
    body: { agent_uid: h.uid, machine_ids: [h.machine], instances },
  });
  expect(r.status, r.raw).toBe(200);
  return r.body.instances as Desired[];
}

const row = (t: TestApp, id: number) =>
  t.deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

const update = (t: TestApp, key: string | null, id: number, body: unknown) =>
  t.request('PUT', `/api/v0/instances/update_template/${id}/`, { key, body });

describeEachDb('update instance', (dialect) => {
  const t = useTestApp(dialect);
  let me: { id: number; apiKey: string };
  beforeAll(async () => {
    me = await renter(t());
  });

  /** A running instance of `me` on a fresh capable machine, created with `body`. */
  async function running(body: Record<string, unknown> = {}) {
    const h = await host(t());
    const c = await t().request('PUT', `/api/v0/asks/${h.machine}/`, {
      key: me.apiKey,
      body: { image: 'ubuntu:22.04', env: { A: '1', '-p 8080:8080': '1' }, onstart: 'echo one', ...body },
    });
    expect(c.status, c.raw).toBe(200);
    const id = c.body.new_contract as number;
    await sync(t(), h, [{ id, state: 'running', ssh_port: 40022, generation: 1 }]);
    expect((await row(t(), id)).actual_status).toBe('running');
    return { h, id, key: c.body.instance_api_key as string };
  }

  it('replaces image, env and onstart; the instance is loading until the new container runs', async () => {
    const { h, id } = await running();
    const r = await update(t(), me.apiKey, id, {
      id,
      image: 'python:3.12',
      env: { B: '2' },
      onstart: 'echo two',
    });
    expect(r.status, r.raw).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.msg).toContain('recreates the container');
    expect(r.body.updated_instance).toMatchObject({
      id,
      image_uuid: 'python:3.12',
      actual_status: 'loading',
      intended_status: 'running',
      onstart: 'echo two',
    });
    expect(r.body.updated_instance.status_msg).toContain('generation 2');
    const after = await row(t(), id);
    expect(after).toMatchObject({
      config_generation: 2,
      image: 'python:3.12',
      onstart: 'echo two',
      machine_id: h.machine,
      actual_status: 'loading',
    });
    // env is replaced as a whole: A and the port request are gone.
    expect(JSON.parse(after.env)).toEqual({ B: '2' });

    // The sync hands the agent the new configuration with its generation.
    const [d1] = await sync(t(), h, [{ id, state: 'running', ssh_port: 40022, generation: 1 }]);
    expect(d1).toMatchObject({
      id,
      generation: 2,
      image: 'python:3.12',
      onstart: 'echo two',
      desired: 'running',
    });
    expect(d1!.env).toEqual({ B: '2' });
    // The old container still runs: its report moves nothing.
    expect((await row(t(), id)).actual_status).toBe('loading');
    // The new one reports loading, then running.
    await sync(t(), h, [
      { id, state: 'loading', status_msg: 'updating: creating the container', generation: 2 },
    ]);
    expect((await row(t(), id)).status_msg).toBe('updating: creating the container');
    await sync(t(), h, [{ id, state: 'running', ssh_port: 40023, generation: 2 }]);
    expect(await row(t(), id)).toMatchObject({ actual_status: 'running', ssh_port: 40023 });

    // The usual events: running → loading with the update's message, loading → running.
    const feed = await t().request('GET', '/api/v0/events/?types=instance.loading,instance.running', {
      key: me.apiKey,
    });
    const mine = (feed.body.events as { type: string; data: any }[]).filter((e) => e.data.instance_id === id);
    expect(mine.map((e) => [e.type, e.data.old_state, e.data.new_state])).toEqual([
      ['instance.running', null, 'running'],
      ['instance.loading', 'running', 'loading'],
      ['instance.running', 'loading', 'running'],
    ]);
    expect(mine[1]!.data.status_msg).toContain('recreates the container');
  });

  it('keeps what is not given: an onstart-only update keeps the image and env', async () => {
    const { id } = await running();
    const r = await update(t(), me.apiKey, id, { onstart: 'echo only' });
    expect(r.status, r.raw).toBe(200);
    const after = await row(t(), id);
    expect(after.image).toBe('ubuntu:22.04');
    expect(JSON.parse(after.env)).toEqual({ A: '1', '-p 8080:8080': '1' });
    expect(after.onstart).toBe('echo only');
  });

  it('args as the official CLI sends them (one string) are split and run under runtype args', async () => {
    const { h, id } = await running();
    const r = await update(t(), me.apiKey, id, { args: `-c 'echo hi; sleep infinity'`, onstart: '/bin/sh' });
    expect(r.status, r.raw).toBe(200);
    const after = await row(t(), id);
    expect(after.runtype).toBe('args');
    expect(JSON.parse(after.args!)).toEqual(['-c', 'echo hi; sleep infinity']);
    const [d] = await sync(t(), h, []);
    expect(d).toMatchObject({ args: ['-c', 'echo hi; sleep infinity'], entrypoint: '/bin/sh' });
    // docker-style env text is read as create reads --env.
    const e = await update(t(), me.apiKey, id, { env: "-e MSG='a b' -p 9000:9000" });
    expect(e.status, e.raw).toBe(200);
    expect(JSON.parse((await row(t(), id)).env)).toEqual({ MSG: 'a b', '-p 9000:9000': '1' });
    // A runtype given is the way back: the onstart runs in the background again, args are unused.
    const back = await update(t(), me.apiKey, id, { runtype: 'ssh', onstart: 'echo back' });
    expect(back.status, back.raw).toBe(200);
    expect((await row(t(), id)).runtype).toBe('ssh');
    const [d2] = await sync(t(), h, []);
    expect(d2).not.toHaveProperty('args');
    expect(d2).toMatchObject({ onstart: 'echo back' });
  });

  it('refuses bad input with a 400 naming the field, and changes nothing', async () => {
    const { id } = await running();
    const before = await row(t(), id);
    const cases: [unknown, RegExp][] = [
      [{ image: 'a b' }, /image/],
      [{ image: '' }, /image/],
      [{ env: { '1X': 'y' } }, /env/],
      [{ env: { CONTAINER_API_KEY: 'y' } }, /CONTAINER_API_KEY/],
      [{ env: '-x foo' }, /env/],
      [{ env: [1] }, /env/],
      [{ onstart: 'x'.repeat(5000) }, /onstart/],
      [{ args: [1, 2] }, /args/],
      [{ runtype: 'bogus' }, /runtype/],
      [{ disk: 50 }, /disk/],
      [{}, /Nothing to update/],
      [{ id: id + 1, image: 'x' }, /id/],
      [{ template_id: 'abc' }, /template_id/],
      [{ template_hash_id: 'nope' }, /template/],
    ];
    for (const [body, msg] of cases) {
      const r = await update(t(), me.apiKey, id, body);
      expect([400, 404], `${JSON.stringify(body)}: ${r.raw}`).toContain(r.status);
      expect(r.body.msg, JSON.stringify(body)).toMatch(msg);
      expect(['bad_request', 'not_found']).toContain(r.body.error);
    }
    expect(await row(t(), id)).toEqual(before);
  });

  it('a machine with fewer direct ports than the new env asks for refuses it', async () => {
    const h = await host(t(), { runtime: 'process' }); // one direct port: SSH
    const c = await t().request('PUT', `/api/v0/asks/${h.machine}/`, {
      key: me.apiKey,
      body: { image: 'x' },
    });
    expect(c.status, c.raw).toBe(200);
    const id = c.body.new_contract as number;
    const r = await update(t(), me.apiKey, id, { env: { '-p 8080:8080': '1' } });
    expect(r.status).toBe(400);
    expect(r.body.msg).toContain('direct ports');
    expect((await row(t(), id)).config_generation).toBe(1);
  });

  it("another user's instance and an unknown id are 404; a destroyed one is 409", async () => {
    const { id } = await running();
    const other = await renter(t());
    const r = await update(t(), other.apiKey, id, { image: 'x' });
    expect(r.status).toBe(404);
    expect(r.body.error).toBe('not_found');
    expect((await update(t(), me.apiKey, 99999999, { image: 'x' })).status).toBe(404);
    expect((await t().request('DELETE', `/api/v0/instances/${id}/`, { key: me.apiKey })).status).toBe(200);
    const d = await update(t(), me.apiKey, id, { image: 'x' });
    expect(d.status).toBe(409);
    expect(d.body.error).toBe('invalid_state');
    expect(d.body.msg).toContain('destroyed');
    expect((await row(t(), id)).image).toBe('ubuntu:22.04');
  });

  it('unknown and offline are refused: the host is out of reach', async () => {
    const { id } = await running();
    for (const s of ['unknown', 'offline']) {
      await t().deps.db.updateTable('instances').set({ actual_status: s }).where('id', '=', id).execute();
      const r = await update(t(), me.apiKey, id, { image: 'x' });
      expect(r.status).toBe(409);
      expect(r.body.error).toBe('invalid_state');
      expect(r.body.msg).toContain(`state ${s}`);
    }
    expect((await row(t(), id)).config_generation).toBe(1);
  });

  it('an agent that does not recreate by generation (older) gets 409 agent_outdated naming why', async () => {
    const h = await host(t(), { capable: false });
    const c = await t().request('PUT', `/api/v0/asks/${h.machine}/`, {
      key: me.apiKey,
      body: { image: 'x' },
    });
    const id = c.body.new_contract as number;
    const r = await update(t(), me.apiKey, id, { image: 'y' });
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('agent_outdated');
    expect(r.body.msg).toContain(`agent of machine ${h.machine}`);
    expect(r.body.msg).toContain('upgrade');
    // A machine with no agent at all cannot recreate anything either.
    const [bare] = await offers(t(), 1);
    const c2 = await t().request('PUT', `/api/v0/asks/${bare}/`, { key: me.apiKey, body: { image: 'x' } });
    const r2 = await update(t(), me.apiKey, c2.body.new_contract as number, { image: 'y' });
    expect(r2.status).toBe(409);
    expect(r2.body.error).toBe('agent_outdated');
    expect(r2.body.msg).toContain('no agent');
    expect((await row(t(), id)).image).toBe('x');

    // An agent replaced by an older one (registering again without the flag) loses it at once.
    const { h: h2, id: id2 } = await running();
    const again = await t().request('POST', `${P}/register`, {
      key: h2.key,
      body: { agent_uid: h2.uid, runtime: 'docker', machines: [agentMachine(0)] },
    });
    expect(again.status).toBe(200);
    expect((await update(t(), me.apiKey, id2, { image: 'y' })).body.error).toBe('agent_outdated');
  });

  it('a stopped instance stays stopped; the sync hands the new generation, still desired stopped', async () => {
    const { h, id } = await running();
    expect(
      (await t().request('PUT', `/api/v0/instances/${id}/`, { key: me.apiKey, body: { state: 'stopped' } }))
        .status,
    ).toBe(200);
    const r = await update(t(), me.apiKey, id, { image: 'alpine:3' });
    expect(r.status, r.raw).toBe(200);
    expect(r.body.msg).toContain('stays stopped');
    expect(r.body.updated_instance).toMatchObject({ actual_status: 'stopped', intended_status: 'stopped' });
    const [d] = await sync(t(), h, [{ id, state: 'stopped', generation: 1 }]);
    expect(d).toMatchObject({ desired: 'stopped', generation: 2, image: 'alpine:3' });
  });

  it('an exited instance is brought back by an update: loading, then running', async () => {
    const { h, id } = await running();
    await sync(t(), h, [
      { id, state: 'exited', status_msg: 'container exited (exit code 1)', generation: 1 },
    ]);
    expect((await row(t(), id)).actual_status).toBe('exited');
    const r = await update(t(), me.apiKey, id, { onstart: 'echo fixed' });
    expect(r.status, r.raw).toBe(200);
    expect((await row(t(), id)).actual_status).toBe('loading');
    // The old container's exit, reported again, does not undo it.
    await sync(t(), h, [
      { id, state: 'exited', status_msg: 'container exited (exit code 1)', generation: 1 },
    ]);
    expect((await row(t(), id)).actual_status).toBe('loading');
    await sync(t(), h, [{ id, state: 'running', ssh_port: 40100, generation: 2 }]);
    expect((await row(t(), id)).actual_status).toBe('running');
  });

  it('concurrent updates: each applies whole, one after another; the last committed is what the agent gets', async () => {
    const { h, id } = await running();
    const N = 8;
    const replies = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        update(t(), me.apiKey, id, { image: `img-${i}`, env: { V: String(i) }, onstart: `echo ${i}` }),
      ),
    );
    for (const [i, r] of replies.entries()) {
      expect(r.status, r.raw).toBe(200);
      // Each reply is the instance as its own update wrote it.
      expect(r.body.updated_instance).toMatchObject({ image_uuid: `img-${i}`, onstart: `echo ${i}` });
    }
    const after = await row(t(), id);
    expect(after.config_generation).toBe(1 + N);
    // Never a mix of two updates: image, env and onstart are all of one of them.
    const i = /^img-(\d)$/.exec(after.image)![1];
    expect(JSON.parse(after.env)).toEqual({ V: i });
    expect(after.onstart).toBe(`echo ${i}`);
    const [d] = await sync(t(), h, []);
    expect(d).toMatchObject({ generation: 1 + N, image: `img-${i}`, onstart: `echo ${i}`, env: { V: i } });

    // Updates of different fields racing: both apply, the second on top of the first.
    const [a, b] = await Promise.all([
      update(t(), me.apiKey, id, { image: 'both-image' }),
      update(t(), me.apiKey, id, { onstart: 'echo both' }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await row(t(), id)).toMatchObject({
      image: 'both-image',
      onstart: 'echo both',
      config_generation: 3 + N,
    });
  });

  it('a template fills image, env, onstart and runtype, merged as create merges them; the given fields win', async () => {
    const { h, id } = await running();
    const tpl = await t().request('POST', '/api/v0/template/', {
      key: me.apiKey,
      body: {
        name: 'torch',
        image: 'pytorch/pytorch',
        tag: '2.3',
        env: '-e A=tpl -e C=3 -p 7000:7000',
        onstart: 'echo from-template',
        runtype: 'ssh',
      },
    });
    expect(tpl.status, tpl.raw).toBe(200);
    const { id: tplId, hash_id: hash, name } = tpl.body.template;
    const r = await update(t(), me.apiKey, id, { template_hash_id: hash, env: { A: 'mine' } });
    expect(r.status, r.raw).toBe(200);
    const after = await row(t(), id);
    expect(after).toMatchObject({
      image: 'pytorch/pytorch:2.3',
      onstart: 'echo from-template',
      runtype: 'ssh',
      template_id: tplId,
      template_name: name,
      template_hash_id: hash,
      config_generation: 2,
    });
    expect(JSON.parse(after.env)).toEqual({ A: 'mine', C: '3', '-p 7000:7000': '1' });
    expect(r.body.updated_instance).toMatchObject({ template_id: tplId, template_hash_id: hash });

    // By template_id (what the official CLI's --template_id sends), with the given image winning.
    const byId = await update(t(), me.apiKey, id, { template_id: tplId, image: 'mine:1' });
    expect(byId.status, byId.raw).toBe(200);
    expect(await row(t(), id)).toMatchObject({ image: 'mine:1', onstart: 'echo from-template' });
    const [d] = await sync(t(), h, []);
    expect(d).toMatchObject({ generation: 3, image: 'mine:1' });

    // Both given must name one template; another user's private one is not found.
    const other = await renter(t());
    const theirs = await t().request('POST', '/api/v0/template/', {
      key: other.apiKey,
      body: { name: 'x', image: 'x' },
    });
    const mismatch = await update(t(), me.apiKey, id, {
      template_id: theirs.body.template.id,
      template_hash_id: hash,
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.msg).toContain('different templates');
    const priv = await update(t(), me.apiKey, id, { template_id: theirs.body.template.id });
    expect(priv.status).toBe(404);
    expect((await row(t(), id)).config_generation).toBe(3);
  });

  it('keys: 401 without one, 403 for a read-only key and for the instance key; nothing changes', async () => {
    const { id, key } = await running();
    expect((await update(t(), null, id, { image: 'x' })).status).toBe(401);
    const ro = await t().request('POST', '/api/v0/auth/apikeys', {
      key: me.apiKey,
      body: { permissions: 'read_only' },
    });
    const r1 = await update(t(), ro.body.key, id, { image: 'x' });
    expect(r1.status).toBe(403);
    expect(r1.body.error).toBe('forbidden');
    const r2 = await update(t(), key, id, { image: 'x' });
    expect(r2.status).toBe(403);
    expect((await row(t(), id)).config_generation).toBe(1);
  });
});
