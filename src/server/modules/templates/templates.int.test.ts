// Templates: create, search, update and delete, who may do what, and bad input that writes nothing.
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { scopedKey, useTestApp, type TestApp } from '../../../../test/helpers/app.js';

const body = (over: Record<string, unknown> = {}) => ({
  name: 'torch',
  image: 'pytorch/pytorch',
  tag: '2.3',
  env: '-e A=1 -e MSG="a b" -p 8080:8080',
  onstart: 'echo hi',
  runtype: 'ssh',
  recommended_disk_space: 20,
  extra_filters: { verified: { eq: true }, num_gpus: { gte: 1 } },
  private: true,
  ...over,
});

async function count(t: TestApp): Promise<number> {
  const r = await t.deps.db
    .selectFrom('templates')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describeEachDb('templates', (dialect) => {
  const t = useTestApp(dialect);
  let owner: { id: number; apiKey: string };
  let other: { id: number; apiKey: string };
  beforeAll(async () => {
    owner = await t().user();
    other = await t().user();
  });

  describe('create, search, update, delete', () => {
    it('creates a template and shows it to its owner only while private', async () => {
      const r = await t().request('POST', '/api/v0/template/', {
        key: owner.apiKey,
        body: body({ name: 'mine' }),
      });
      expect(r.status, r.raw).toBe(200);
      expect(r.body.success).toBe(true);
      const tpl = r.body.template;
      expect(tpl).toMatchObject({
        name: 'mine',
        image: 'pytorch/pytorch',
        tag: '2.3',
        creator_id: owner.id,
        private: true,
        recommended_disk_space: 20,
        runtype: 'ssh',
        extra_filters: { verified: { eq: true }, num_gpus: { gte: 1 } },
      });
      expect(tpl.hash_id).toMatch(/^[0-9a-f]{32}$/);
      const mine = await t().request('GET', '/api/v0/template/', { key: owner.apiKey });
      expect(mine.status).toBe(200);
      expect(mine.body.templates.map((x: { id: number }) => x.id)).toContain(tpl.id);
      const theirs = await t().request('GET', '/api/v0/template/', { key: other.apiKey });
      expect(theirs.body.templates.map((x: { id: number }) => x.id)).not.toContain(tpl.id);
    });

    it('shows public templates to everyone, newest first, and filters them', async () => {
      const a = await t().request('POST', '/api/v0/template/', {
        key: other.apiKey,
        body: body({ name: 'pub-a', private: false, recommended_disk_space: '8.0' }),
      });
      expect(a.status, a.raw).toBe(200);
      expect(a.body.template.recommended_disk_space).toBe(8);
      t().clock.advance(1000);
      const b = await t().request('POST', '/api/v0/template/', {
        key: other.apiKey,
        body: body({ name: 'pub-b', private: false, runtype: 'args' }),
      });
      const all = await t().request('GET', '/api/v0/template/', { key: owner.apiKey });
      const ids = all.body.templates.map((x: { id: number }) => x.id);
      expect(ids.indexOf(b.body.template.id)).toBeLessThan(ids.indexOf(a.body.template.id));
      const q = (f: unknown) =>
        t().request('GET', `/api/v0/template/?select_filters=${encodeURIComponent(JSON.stringify(f))}`, {
          key: owner.apiKey,
        });
      const byName = await q({ name: { eq: 'pub-a' } });
      expect(byName.status, byName.raw).toBe(200);
      expect(byName.body.templates.map((x: { name: string }) => x.name)).toEqual(['pub-a']);
      const small = await q({ recommended_disk_space: { lte: 10 }, creator_id: { eq: other.id } });
      expect(small.body.templates.map((x: { name: string }) => x.name)).toEqual(['pub-a']);
      const notArgs = await q({ runtype: { notin: ['args'] }, private: { eq: false } });
      expect(notArgs.body.templates.map((x: { name: string }) => x.name)).toEqual(['pub-a']);
      const privateOnes = await q({ private: { eq: true } });
      for (const x of privateOnes.body.templates) expect(x.creator_id).toBe(owner.id);
      const since = await q({ created_at: { gt: b.body.template.created_at - 0.5 } });
      expect(since.body.templates.map((x: { name: string }) => x.name)).toContain('pub-b');
      expect(since.body.templates.map((x: { name: string }) => x.name)).not.toContain('pub-a');
      const limited = await t().request('GET', '/api/v0/template/?limit=1', { key: owner.apiKey });
      expect(limited.body.templates).toHaveLength(1);
      for (const [f, word] of [
        [{ nope: { eq: 1 } }, 'nope'],
        [{ name: { like: 'x' } }, 'like'],
        [{ name: { gt: 'a' } }, 'name'],
        [{ id: { eq: 'x' } }, 'id'],
        [{ private: { eq: 'maybe' } }, 'private'],
      ] as const) {
        const r = await q(f);
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('bad_request');
        expect(r.body.msg).toContain(word);
      }
      expect((await t().request('GET', '/api/v0/template/?limit=0', { key: owner.apiKey })).status).toBe(400);
    });

    it('updates only its owner’s template, giving it a new hash_id; null fields keep their value', async () => {
      const c = await t().request('POST', '/api/v0/template/', {
        key: owner.apiKey,
        body: body({ name: 'v1' }),
      });
      const h1 = c.body.template.hash_id as string;
      const stranger = await t().request('PUT', '/api/v0/template/', {
        key: other.apiKey,
        body: { hash_id: h1, name: 'stolen' },
      });
      expect(stranger.status).toBe(404);
      expect(stranger.body.msg).toContain(h1);
      const u = await t().request('PUT', '/api/v0/template/', {
        key: owner.apiKey,
        body: { hash_id: h1, name: 'v2', image: null, onstart: 'echo two', private: false },
      });
      expect(u.status, u.raw).toBe(200);
      expect(u.body.success).toBe(true);
      expect(u.body.template).toMatchObject({
        id: c.body.template.id,
        name: 'v2',
        image: 'pytorch/pytorch',
        onstart: 'echo two',
        private: false,
      });
      expect(u.body.template.hash_id).not.toBe(h1);
      // The old version is gone: updating or deleting it again is a 404.
      const again = await t().request('PUT', '/api/v0/template/', {
        key: owner.apiKey,
        body: { hash_id: h1, name: 'v3' },
      });
      expect(again.status).toBe(404);
      const row = await t()
        .deps.db.selectFrom('templates')
        .selectAll()
        .where('id', '=', c.body.template.id)
        .executeTakeFirstOrThrow();
      expect(row.name).toBe('v2');
    });

    it('deletes by hash_id or template_id, the owner only', async () => {
      const a = await t().request('POST', '/api/v0/template/', {
        key: owner.apiKey,
        body: body({ name: 'del-a', private: false }),
      });
      const b = await t().request('POST', '/api/v0/template/', {
        key: owner.apiKey,
        body: body({ name: 'del-b' }),
      });
      const stranger = await t().request('DELETE', '/api/v0/template/', {
        key: other.apiKey,
        body: { hash_id: a.body.template.hash_id },
      });
      expect(stranger.status).toBe(404);
      expect(stranger.body.msg).toBeTruthy();
      const byId = await t().request('DELETE', '/api/v0/template/', {
        key: other.apiKey,
        body: { template_id: b.body.template.id },
      });
      expect(byId.status).toBe(404);
      const d1 = await t().request('DELETE', '/api/v0/template/', {
        key: owner.apiKey,
        body: { hash_id: a.body.template.hash_id },
      });
      expect(d1.status, d1.raw).toBe(200);
      expect(d1.body.msg).toContain(String(a.body.template.id));
      const d2 = await t().request('DELETE', '/api/v0/template/', {
        key: owner.apiKey,
        body: { template_id: b.body.template.id },
      });
      expect(d2.status).toBe(200);
      const twice = await t().request('DELETE', '/api/v0/template/', {
        key: owner.apiKey,
        body: { template_id: b.body.template.id },
      });
      expect(twice.status).toBe(404);
      const none = await t().request('DELETE', '/api/v0/template/', { key: owner.apiKey, body: {} });
      expect(none.status).toBe(400);
      const seen = await t().request('GET', '/api/v0/template/', { key: other.apiKey });
      expect(seen.body.templates.map((x: { id: number }) => x.id)).not.toContain(a.body.template.id);
    });
  });

  it('needs a key, instances read to search and instances write to change', async () => {
    for (const m of ['GET', 'POST', 'PUT', 'DELETE']) {
      const r = await t().request(m, '/api/v0/template/', {
        key: null,
        body: m === 'GET' ? undefined : body(),
      });
      expect(r.status, m).toBe(401);
    }
    const reader = await scopedKey(t(), owner.apiKey, { instances: 'read' });
    expect((await t().request('GET', '/api/v0/template/', { key: reader })).status).toBe(200);
    const before = await count(t());
    const w = await t().request('POST', '/api/v0/template/', { key: reader, body: body() });
    expect(w.status).toBe(403);
    const offersOnly = await scopedKey(t(), owner.apiKey, { offers: 'read' });
    expect((await t().request('GET', '/api/v0/template/', { key: offersOnly })).status).toBe(403);
    const writer = await scopedKey(t(), owner.apiKey, { instances: 'write' });
    expect((await t().request('POST', '/api/v0/template/', { key: writer, body: body() })).status).toBe(200);
    expect(await count(t())).toBe(before + 1);
  });

  it('refuses bad input with 400 naming the field, and writes nothing', async () => {
    const before = await count(t());
    const cases: [Record<string, unknown>, string][] = [
      [{ name: null }, 'name'],
      [{ name: 'x'.repeat(201) }, 'name'],
      [{ image: 'x'.repeat(501) }, 'image'],
      [{ image: 'two words' }, 'image'],
      [{ tag: 'a b' }, 'tag'],
      [{ env: 'x'.repeat(4097) }, 'env'],
      [{ env: '-v /:/host' }, 'env'],
      [{ env: '-e 1BAD=x' }, 'env'],
      [{ env: '-e CONTAINER_API_KEY=x' }, 'env'],
      [{ env: '-p 99999' }, 'env'],
      [{ onstart: 'x'.repeat(5000) }, 'onstart'],
      [{ runtype: 'rocket' }, 'runtype'],
      [{ recommended_disk_space: -1 }, 'recommended_disk_space'],
      [{ recommended_disk_space: 'lots' }, 'recommended_disk_space'],
      [{ recommended_disk_space: 2_000_000 }, 'recommended_disk_space'],
      [{ extra_filters: [1] }, 'extra_filters'],
      [{ extra_filters: { warp_speed: { eq: 9 } } }, 'warp_speed'],
      [{ extra_filters: { k: 'x'.repeat(17000) } }, 'extra_filters'],
      [{ private: 'yes' }, 'private'],
      [{ readme: 'x'.repeat(16385) }, 'readme'],
      [{ desc: 'x'.repeat(4097) }, 'desc'],
      [{ href: 'a\nb' }, 'href'],
    ];
    for (const [over, field] of cases) {
      const r = await t().request('POST', '/api/v0/template/', { key: owner.apiKey, body: body(over) });
      expect(r.status, JSON.stringify(over).slice(0, 80)).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg, JSON.stringify(over).slice(0, 80)).toContain(field);
    }
    const c = await t().request('POST', '/api/v0/template/', {
      key: owner.apiKey,
      body: body({ name: 'keep' }),
    });
    const u = await t().request('PUT', '/api/v0/template/', {
      key: owner.apiKey,
      body: { hash_id: c.body.template.hash_id, env: '-x' },
    });
    expect(u.status).toBe(400);
    const row = await t()
      .deps.db.selectFrom('templates')
      .selectAll()
      .where('id', '=', c.body.template.id)
      .executeTakeFirstOrThrow();
    expect(row.hash_id).toBe(c.body.template.hash_id);
    expect(await count(t())).toBe(before + 1);
  });
});
