// The official CLI's template commands (create template, search templates, update template,
// delete template, and create instance --template_hash), each request as that CLI sends it, each
// reply checked for every field the CLI reads (docs/compatibility.md, rows marked "works").
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter } from '../helpers/market.js';
import { cli, cliCreateBody, expectOk, f } from './official-cli.js';

const DEFAULT_QUERY = {
  verified: { eq: true },
  external: { eq: false },
  rentable: { eq: true },
  rented: { eq: false },
};

/** `create template` / `update template`'s body: every option not given is null or false. */
const cliTemplateBody = (over: Record<string, unknown> = {}) => ({
  name: null,
  image: null,
  tag: null,
  href: null,
  repo: null,
  env: null,
  onstart: null,
  jup_direct: false,
  ssh_direct: false,
  use_jupyter_lab: false,
  runtype: 'args',
  use_ssh: false,
  jupyter_dir: null,
  docker_login_repo: null,
  extra_filters: DEFAULT_QUERY,
  recommended_disk_space: null,
  readme: null,
  readme_visible: true,
  desc: null,
  private: true,
  ...over,
});

describeEachDb('official CLI: template commands', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let otherKey: string;
  beforeAll(async () => {
    key = (await renter(t())).apiKey;
    otherKey = (await renter(t())).apiKey;
  });

  let hash = '';
  let id = 0;
  it('create template: {success, template} with its hash_id', async () => {
    // vastai create template --name tgi --image ghcr.io/x/tgi --image_tag 1.0.3 --env "-p 3000:3000 -e M='a b'"
    //   --onstart-cmd 'echo hi' --search_params "gpu_ram>=23 num_gpus=1" --disk_space 8.0 --ssh --direct
    const r = await cli(t(), {
      method: 'POST',
      path: '/template/',
      key,
      json: cliTemplateBody({
        name: 'tgi',
        image: 'ghcr.io/x/tgi',
        tag: '1.0.3',
        env: "-p 3000:3000 -e M='a b'",
        onstart: 'echo hi',
        ssh_direct: true,
        runtype: 'ssh',
        use_ssh: true,
        extra_filters: { ...DEFAULT_QUERY, gpu_ram: { gte: 23000.0 }, num_gpus: { eq: '1' } },
        recommended_disk_space: '8.0',
      }),
    });
    expectOk(r);
    expect(r.body.success).toBe(true);
    expect(r.body.template).toMatchObject({
      name: 'tgi',
      image: 'ghcr.io/x/tgi',
      tag: '1.0.3',
      runtype: 'ssh',
    });
    expect(r.body.template.recommended_disk_space).toBe(8);
    hash = r.body.template.hash_id;
    id = r.body.template.id;
    expect(hash).toMatch(/^[0-9a-f]{32}$/);
  });

  it("create template --search_params 'driver_version>=535.86.05': taken as a search takes it", async () => {
    // The CLI sends the dotted version as its number (535086005), as search offers does.
    const r = await cli(t(), {
      method: 'POST',
      path: '/template/',
      key,
      json: cliTemplateBody({
        name: 'new-driver',
        image: 'ghcr.io/x/tgi',
        extra_filters: { ...DEFAULT_QUERY, driver_version: { gte: 535086005 } },
      }),
    });
    expectOk(r);
    expect(r.body.template.extra_filters.driver_version).toEqual({ gte: 535086005 });
    const bad = await cli(t(), {
      method: 'POST',
      path: '/template/',
      key,
      json: cliTemplateBody({
        name: 'bad-driver',
        image: 'ghcr.io/x/tgi',
        extra_filters: { ...DEFAULT_QUERY, driver_version: { gte: 'newest' } },
      }),
    });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toContain('extra_filters');
    expect(bad.body.msg).toContain('driver_version');
  });

  it('create template: a bad field is a 400 the CLI raises on, naming the field', async () => {
    const r = await cli(t(), {
      method: 'POST',
      path: '/template/',
      key,
      json: cliTemplateBody({ name: 'x', image: 'a b' }),
    });
    expect(r.status).toBe(400);
    expect(r.contentType).toBe('application/json');
    expect(r.body.msg).toContain('image');
  });

  it('search templates: GET /template/?select_cols=["*"]&select_filters={...} answers {templates}', async () => {
    // vastai search templates            (no query: select_filters {})
    const all = await cli(t(), {
      method: 'GET',
      path: '/template/',
      query: { select_cols: ['*'], select_filters: {} },
      key,
    });
    expectOk(all);
    expect(all.body.templates.map((x: { hash_id: string }) => x.hash_id)).toContain(hash);
    // vastai search templates 'name=tgi recommended_disk_space<=10'
    const some = await cli(t(), {
      method: 'GET',
      path: '/template/',
      query: {
        select_cols: ['*'],
        select_filters: { name: { eq: 'tgi' }, recommended_disk_space: { lte: 10 } },
      },
      key,
    });
    expectOk(some);
    expect(some.body.templates.map((x: { id: number }) => x.id)).toEqual([id]);
    // Another user does not see a private template.
    const theirs = await cli(t(), {
      method: 'GET',
      path: '/template/',
      query: { select_cols: ['*'], select_filters: { name: { eq: 'tgi' } } },
      key: otherKey,
    });
    expectOk(theirs);
    expect(theirs.body.templates).toEqual([]);
  });

  it('update template: the template with a new hash_id; the owner only', async () => {
    // vastai update template HASH --name tgi2 --image ghcr.io/x/tgi --public
    const json = cliTemplateBody({ hash_id: hash, name: 'tgi2', image: 'ghcr.io/x/tgi', private: false });
    const stranger = await cli(t(), { method: 'PUT', path: '/template/', key: otherKey, json });
    expect(stranger.status).toBe(404);
    const r = await cli(t(), { method: 'PUT', path: '/template/', key, json });
    expectOk(r);
    expect(r.body.success).toBe(true);
    expect(r.body.template).toMatchObject({
      id,
      name: 'tgi2',
      private: false,
      runtype: 'args',
      tag: '1.0.3',
    });
    expect(r.body.template.hash_id).not.toBe(hash);
    hash = r.body.template.hash_id;
    const seen = await cli(t(), {
      method: 'GET',
      path: '/template/',
      query: { select_cols: ['*'], select_filters: { name: { eq: 'tgi2' } } },
      key: otherKey,
    });
    expect(seen.body.templates.map((x: { id: number }) => x.id)).toEqual([id]);
  });

  it('delete template: --hash-id or --template-id; the CLI prints msg, also of a 404', async () => {
    const stranger = await cli(t(), {
      method: 'DELETE',
      path: '/template/',
      key: otherKey,
      json: { hash_id: hash },
    });
    expect(stranger.status).toBe(404);
    expect(stranger.contentType).toBe('application/json');
    expect(typeof stranger.body.msg).toBe('string');
    const r = await cli(t(), { method: 'DELETE', path: '/template/', key, json: { hash_id: hash } });
    expectOk(r);
    expect(r.body.msg).toContain(String(id));
    const c = await cli(t(), {
      method: 'POST',
      path: '/template/',
      key,
      json: cliTemplateBody({ name: 'n', image: 'ubuntu' }),
    });
    const byId = await cli(t(), {
      method: 'DELETE',
      path: '/template/',
      key,
      json: { template_id: c.body.template.id },
    });
    expectOk(byId);
    expect(typeof byId.body.msg).toBe('string');
    const gone = await cli(t(), {
      method: 'DELETE',
      path: '/template/',
      key,
      json: { template_id: c.body.template.id },
    });
    expect(gone.status).toBe(404);
    expect(typeof gone.body.msg).toBe('string');
  });

  it('create instance --template_hash: the template fills the body; show instances-v1 -v shows template_id and template_name', async () => {
    const c = await cli(t(), {
      method: 'POST',
      path: '/template/',
      key,
      json: cliTemplateBody({
        name: 'web',
        image: 'nginx',
        tag: '1.27',
        env: '-e A=1 -p 8080:8080',
        runtype: 'ssh',
        use_ssh: true,
      }),
    });
    expectOk(c);
    const [offer] = await offers(t(), 1);
    // vastai create instance OFFER --template_hash HASH   (no runtype is sent with a template)
    const { runtype: _r, ...json } = cliCreateBody({
      image: null,
      template_hash_id: c.body.template.hash_id,
      disk: f(10),
    });
    const r = await cli(t(), { method: 'PUT', path: `/asks/${offer}/`, key, json });
    expectOk(r);
    expect(r.body.success).toBe(true);
    const id = r.body.new_contract as number;
    const cols = ['id', 'actual_status', 'image_uuid', 'machine_id', 'template_id', 'template_name'];
    const list = await cli(t(), {
      method: 'GET',
      path: '/api/v1/instances/',
      query: { select_filters: {}, order_by: [{ col: 'id', dir: 'asc' }], limit: 25, select_cols: cols },
      key,
    });
    expectOk(list);
    const row = list.body.instances.find((x: { id: number }) => x.id === id);
    expect(row).toMatchObject({
      image_uuid: 'nginx:1.27',
      template_id: c.body.template.id,
      template_name: 'web',
    });
    // Another user's private template, or an unknown hash: an error the CLI raises on, and no instance.
    const [offer2] = await offers(t(), 1);
    for (const [k, hash] of [
      [otherKey, c.body.template.hash_id],
      [key, '0'.repeat(32)],
    ] as const) {
      const { runtype: _x, ...bad } = cliCreateBody({ image: null, template_hash_id: hash });
      const e = await cli(t(), { method: 'PUT', path: `/asks/${offer2}/`, key: k, json: bad });
      expect(e.status).toBe(404);
      expect(e.body.msg).toContain('template');
    }
  });
});
