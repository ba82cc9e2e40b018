// The OpenAPI document the server serves shows each route's contract (src/contract/schemas/)
// exactly: its params, query, headers, body and every response, field for field.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../test/helpers/db.js';
import { useTestApp } from '../../test/helpers/app.js';
import * as contracts from '../contract/schemas/index.js';
import { compatRouteList } from './modules/compat/compat.routes.js';

interface Contract {
  method: string | readonly string[];
  url: string;
  schema: Record<string, any>;
}

const isContract = (v: unknown): v is Contract =>
  typeof v === 'object' && v !== null && 'method' in v && 'url' in v && 'schema' in v;

const declared: [string, Contract][] = Object.entries(contracts).flatMap(([mod, exports]) =>
  Object.entries(exports)
    .filter(([, v]) => isContract(v))
    .map(([name, v]) => [`${mod}.${name}`, v as Contract] as [string, Contract]),
);

/** The refused requests of the official CLI: one contract each, made from the server's list. */
const refused: [string, Contract][] = compatRouteList.map((r) => [
  `compat.${String(r.contract.method)} ${r.contract.url}`,
  r.contract,
]);

const every = [...declared, ...refused];
/** Hidden routes are served but not documented. */
const all = every.filter(([, c]) => c.schema.hide !== true);
const hidden = every.filter(([, c]) => c.schema.hide === true);

/** As JSON carries it (descriptions left undefined disappear). */
const json = (v: unknown): any => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
const withoutDescription = (v: any) => {
  if (v === undefined) return v;
  const { description: _d, ...rest } = json(v);
  return rest;
};
const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const methodsOf = (c: Contract) => (Array.isArray(c.method) ? c.method : [c.method]) as string[];

/** The parameters @fastify/swagger makes of an object schema: one per property. */
function parameters(schema: any, where: string): any[] {
  if (!schema) return [];
  const s = json(schema);
  const required = new Set<string>(s.required ?? []);
  return Object.entries(s.properties ?? {}).map(([name, prop]: [string, any]) => {
    const { description, ...rest } = prop;
    return {
      schema: rest,
      in: where,
      name,
      required: where === 'path' ? true : required.has(name),
      ...(description !== undefined ? { description } : {}),
    };
  });
}

it('the contracts are found (a contract file not exported by schemas/index.ts is not checked)', () => {
  expect(all.length).toBeGreaterThan(20);
  expect(all.map(([n]) => n)).toContain('instances.showInstance');
  expect(refused.length).toBeGreaterThan(10);
  expect(hidden.map(([n]) => n)).toContain('platform.metrics');
});

describeEachDb('the OpenAPI document shows each route contract exactly', (dialect) => {
  const t = useTestApp(dialect);

  it('for every contract, the served operation has its params, query, headers, body and responses', async () => {
    const doc = (await t().request('GET', '/api/v0/openapi.json')).body;
    for (const [name, c] of all) {
      for (const method of methodsOf(c)) {
        const op = doc.paths?.[toOpenApiPath(c.url)]?.[method.toLowerCase()];
        expect(op, `${name}: ${method} ${c.url} is served and documented`).toBeDefined();
        const s = c.schema;
        expect(op.summary, name).toBe(s.summary);
        const want = [
          ...parameters(s.params, 'path'),
          ...parameters(s.querystring, 'query'),
          ...parameters(s.headers, 'header'),
        ];
        const sortKey = (p: any) => `${p.in}:${p.name}`;
        const sorted = (ps: any[]) => [...ps].sort((a, b) => sortKey(a).localeCompare(sortKey(b)));
        expect(sorted(op.parameters ?? []), `${name}: parameters`).toEqual(sorted(want));
        expect(op.requestBody?.content?.['application/json']?.schema, `${name}: body`).toEqual(json(s.body));
        const codes = Object.keys(s.response ?? {});
        expect(Object.keys(op.responses ?? {}).sort(), `${name}: response codes`).toEqual(codes.sort());
        for (const code of codes) {
          const served = op.responses[code]?.content?.['application/json']?.schema;
          expect(withoutDescription(served), `${name}: ${code} reply`).toEqual(
            withoutDescription(s.response[code]),
          );
        }
      }
    }
  });

  it('the hidden contracts are served but not documented', async () => {
    const doc = (await t().request('GET', '/api/v0/openapi.json')).body;
    for (const [name, c] of hidden)
      for (const method of methodsOf(c)) {
        expect(doc.paths?.[toOpenApiPath(c.url)]?.[method.toLowerCase()], name).toBeUndefined();
        expect(t().app.hasRoute({ method, url: c.url }), `${name} is served`).toBe(true);
      }
  });

  it('every documented route has a contract', async () => {
    const doc = (await t().request('GET', '/api/v0/openapi.json')).body;
    const known = new Set(all.flatMap(([, c]) => methodsOf(c).map((m) => `${m} ${toOpenApiPath(c.url)}`)));
    const without: string[] = [];
    for (const [path, ops] of Object.entries<any>(doc.paths))
      for (const method of Object.keys(ops))
        if (!known.has(`${method.toUpperCase()} ${path}`)) without.push(`${method.toUpperCase()} ${path}`);
    expect(without).toEqual([]);
  });
});
