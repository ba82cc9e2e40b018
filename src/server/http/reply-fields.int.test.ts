// Every field a handler returns in the main replies is declared in the route's response schema
// (src/contract/schemas/): an undeclared one would be dropped from the JSON without a word. With
// OPENRIG_CHECK_REPLIES=1 the app checks each reply a contract route's handler returns against its
// schema and answers 500 naming the undeclared fields (reply-fields.ts, route.ts); the routes below
// are driven through it.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { offers, renter, runningInstance } from '../../../test/helpers/market.js';
import { jsonQuery } from '../../../test/helpers/market.js';
import { undeclaredFields } from './reply-fields.js';
import { insertMachines } from '../modules/machines/machines.service.js';
import { searchOffers } from '../modules/offers/offers.service.js';
import { offersReply } from '../../contract/schemas/offers.js';
import { instanceEnvelope } from '../../contract/schemas/instances.js';

process.env.OPENRIG_CHECK_REPLIES = '1';

it('undeclaredFields names each field a schema does not declare, at any depth', () => {
  const schema = {
    type: 'object',
    properties: {
      a: { type: 'integer' },
      list: { type: 'array', items: { type: 'object', properties: { b: { type: 'string' } } } },
      map: {
        type: 'object',
        additionalProperties: { type: 'object', properties: { c: { type: 'integer' } } },
      },
      open: { type: 'object', additionalProperties: true },
    },
  };
  expect(
    undeclaredFields(schema, { a: 1, list: [{ b: 'x' }], map: { k: { c: 1 } }, open: { any: 1 } }),
  ).toEqual([]);
  expect(
    undeclaredFields(schema, {
      a: 1,
      z: 2,
      gone: undefined,
      list: [{ b: 'x', y: 1 }],
      map: { k: { c: 1, d: 2 } },
    }),
  ).toEqual(['$.z', '$.list[0].y', '$.map.k.d']);
});

describeEachDb('reply fields are all declared', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let id: number;
  beforeAll(async () => {
    const u = await renter(t());
    key = u.apiKey;
    const [m] = await offers(t(), 2);
    id = await runningInstance(t(), key, m!, { label: 'lab', env: { A: '1', '-p 8080:8080': '1' } });
  });

  it('the instance routes: create, the lists, one instance, the update, bulk and SSH replies', async () => {
    const [m2] = await offers(t(), 1);
    const created = await t().request('PUT', `/api/v0/asks/${m2}/`, { key, body: { image: 'x', disk: 10 } });
    expect(created.status, created.raw).toBe(200);
    for (const url of [
      '/api/v0/instances/',
      `/api/v0/instances/${id}/`,
      '/api/v1/instances/',
      `/api/v1/instances/?${jsonQuery({ select_cols: ['*'] })}`,
      '/api/v0/instances/filters/',
      `/api/v0/instances/${id}/ssh/`,
    ]) {
      const r = await t().request('GET', url, { key });
      expect(r.status, `${url}: ${r.raw}`).toBe(200);
    }
    const one = await t().request('GET', `/api/v0/instances/${id}/`, { key });
    expect(one.body.instances.label).toBe('lab');
    const bulk = await t().request('PUT', '/api/v0/instances/', {
      key,
      body: { state: 'stopped', ids: [id] },
    });
    expect(bulk.status, bulk.raw).toBe(200);
    const label = await t().request('PUT', `/api/v0/instances/${id}/`, { key, body: { label: 'b' } });
    expect(label.status, label.raw).toBe(200);
  });

  it('the instance row served carries every field its schema declares', async () => {
    const one = await t().request('GET', `/api/v0/instances/${id}/`, { key });
    // The served row has every field the schema declares, so none was dropped on the way either.
    const declared = Object.keys(instanceEnvelope.properties.instances.properties);
    expect(Object.keys(one.body.instances).sort()).toEqual([...declared].sort());
  });

  it('the offers a search returns (written from the offer schema, not by Fastify) are all declared', async () => {
    const page = await searchOffers(t().deps, {});
    expect(page.offers.length).toBeGreaterThan(0);
    expect(undeclaredFields(offersReply, page)).toEqual([]);
    const served = await t().request('POST', '/api/v0/bundles/', { key, body: {} });
    expect(Object.keys(served.body.offers[0]).sort()).toEqual(Object.keys(page.offers[0]!).sort());
  });

  it('the machine routes: the list, one machine, listing and unlisting, the CLI forms, maintenance windows', async () => {
    const host = await t().user();
    const [m] = await insertMachines(
      t().deps.db,
      [{ hostId: host.id, gpuName: 'RTX 4090', numGpus: 2, priceGpu: 0.5 }],
      t().clock.now(),
    );
    const k = host.apiKey;
    const soon = Math.floor(t().clock.now() / 1000) + 3600;
    const calls: [string, string, unknown?][] = [
      ['GET', '/api/v0/machines/'],
      ['GET', `/api/v0/machines/${m}/`],
      ['PUT', `/api/v0/machines/${m}/list/`, { price_gpu: 0.4, price_disk: 0.1, min_bid: 0.2 }],
      ['PUT', `/api/v0/machines/${m}/unlist/`],
      ['PUT', '/api/v0/machines/create_asks/', { machine: m, price_gpu: null, price_min_bid: 0.1 }],
      ['PUT', `/api/v0/machines/${m}/minbid/`, { price: 0.2 }],
      ['PUT', `/api/v0/machines/${m}/dnotify/`, { sdate: soon, duration: 2 }],
      ['POST', '/api/v0/machines/maintenances/batch/', { machine_ids: [m], sdate: soon + 86400 }],
      ['GET', '/api/v0/machines/maintenances/'],
      ['GET', '/api/v0/machines/'],
      ['PUT', `/api/v0/machines/${m}/cancel_maint/`],
      ['DELETE', '/api/v0/machines/maintenances/batch/', { machine_ids: [m] }],
      ['DELETE', `/api/v0/machines/${m}/asks/`],
      ['POST', `/api/v0/machines/${m}/force_delete/`, {}],
    ];
    for (const [method, url, body] of calls) {
      const r = await t().request(method, url, { key: k, body });
      expect(r.status, `${method} ${url}: ${r.raw}`).toBe(200);
    }
  });

  it('the account routes: the user, its settings, the audit log, its addresses, SSH keys, env vars, templates, API keys, webhooks and events', async () => {
    for (const [method, url, body] of [
      ['GET', '/api/v0/users/current/'],
      ['PUT', '/api/v0/users/', { fullname: 'A B', billaddress_city: 'Paris', balance_threshold: 5 }],
      ['GET', '/api/v0/audit_logs/'],
      ['GET', '/api/v0/users/me/ipaddrs/'],
      ['GET', '/api/v0/ssh/'],
      ['POST', '/api/v0/secrets/', { key: 'A_B', value: 'c' }],
      ['GET', '/api/v0/secrets/'],
      ['POST', '/api/v0/template/', { name: 't', image: 'pytorch/pytorch', tag: '2', env: '-e A=1' }],
      ['GET', '/api/v0/template/'],
      ['POST', '/api/v0/auth/apikeys/', { name: 'k', permissions: 'read_only' }],
      ['GET', '/api/v0/auth/apikeys/'],
      ['GET', '/api/v0/webhooks/'],
      ['GET', '/api/v0/events/'],
      ['PUT', '/api/v0/events/settings/', { balance_low_threshold: 3 }],
    ] as [string, string, unknown?][]) {
      const r = await t().request(method, url, { key, body });
      expect(r.status, `${method} ${url}: ${r.raw}`).toBe(200);
    }
    const logs = await t().request('GET', '/api/v0/audit_logs/', { key });
    expect(logs.body.length).toBeGreaterThan(0);
    const events = await t().request('GET', '/api/v0/events/', { key });
    expect(events.body.events.length).toBeGreaterThan(0);
  });

  it('the billing routes: balance, ledger, earnings, and the billing history in each format', async () => {
    const host = await t().user();
    const day = Math.floor(t().clock.now() / 86_400_000);
    const now = Math.floor(t().clock.now() / 1000);
    const calls: [string, string, unknown?][] = [
      ['GET', '/api/v0/billing/'],
      ['GET', '/api/v0/billing/charges/'],
      ['GET', '/api/v0/users/me/invoices/'],
      ['POST', '/api/v0/contracts/fetch/', { label: 'lab', contract_ids: [id] }],
      ['GET', '/api/v0/invoices/'],
      [
        'GET',
        `/api/v1/invoices/?${jsonQuery({ select_filters: { when: { gte: now - 86400, lte: now + 86400 } } })}`,
      ],
      [
        'GET',
        `/api/v0/charges/?${jsonQuery({ select_filters: { day: { gte: now - 86400, lte: now + 86400 } } })}`,
      ],
    ];
    for (const [method, url, body] of calls) {
      const r = await t().request(method, url, { key, body });
      expect(r.status, `${method} ${url}: ${r.raw}`).toBe(200);
    }
    const earnings = await t().request(
      'GET',
      `/api/v0/users/me/machine-earnings/?sday=${day - 1}&eday=${day}`,
      {
        key: host.apiKey,
      },
    );
    expect(earnings.status, earnings.raw).toBe(200);
  });
});
