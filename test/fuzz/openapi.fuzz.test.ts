// Fuzzing generated from /api/v0/openapi.json: for every documented route,
// fast-check builds requests from its schemas (valid bodies, then bad types, huge values, unknown
// fields, dropped fields, wrong content types, malformed JSON, oversized bodies; with a valid key,
// a bogus key, the key in the query string, or none) and checks every reply:
// - never a 5xx;
// - an error is `{error, msg}` (both strings) with Content-Type exactly `application/json`;
// - a 2xx is a documented status and its body matches the documented response schema.
// Routes are read from the document at run time, so routes added later are fuzzed too.
// Runs: FUZZ_RUNS requests per database in total (default: a short run for `npm test`;
// `npm run fuzz` sets 10,000). FUZZ_SEED replays a run; FUZZ_ONLY=/path/part fuzzes only the
// routes whose path contains it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import fc from 'fast-check';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import { describeEachDb } from '../helpers/db.js';
import { makeTestApp, type TestApp } from '../helpers/app.js';
import {
  applyMutation,
  deref,
  hostile,
  mutation,
  valid,
  type Mutation,
  type Schema,
} from './fuzz.schema-arb.js';

const RUNS = Number(process.env.FUZZ_RUNS || 300);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
/** Only the routes whose path contains this (to chase one finding). */
const ONLY = process.env.FUZZ_ONLY || '';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

interface Param {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: Schema;
}

interface Op {
  method: string;
  path: string;
  params: Param[];
  body: Schema | undefined;
  responses: Record<string, Schema | undefined>;
}

type Transport = 'json' | 'json-charset' | 'text' | 'form' | 'malformed' | 'empty' | 'none' | 'huge';
type Cred = 'valid' | 'none' | 'bogus' | 'query';

interface Req {
  cred: Cred;
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
  mut: Mutation;
  transport: Transport;
}

function operations(doc: Schema): Op[] {
  const ops: Op[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Schema>)) {
    for (const m of METHODS) {
      const op = item[m] as Schema | undefined;
      if (!op) continue;
      const params = deref(
        [...((item.parameters as Param[]) ?? []), ...((op.parameters as Param[]) ?? [])],
        doc,
      ) as Param[];
      const body = deref(op.requestBody?.content?.['application/json']?.schema, doc) as Schema | undefined;
      const responses: Record<string, Schema | undefined> = {};
      for (const [status, r] of Object.entries((op.responses ?? {}) as Record<string, Schema>)) {
        responses[status] = deref(r?.content?.['application/json']?.schema, doc) as Schema | undefined;
      }
      ops.push({ method: m.toUpperCase(), path, params, body, responses });
    }
  }
  return ops;
}

/**
 * Path values: mostly small ids that may exist, then anything but the empty string (an empty
 * segment routes to another documented route, e.g. /instances/{id}/ to /instances/).
 */
const pathValue = (schema: Schema | undefined): fc.Arbitrary<unknown> =>
  fc
    .oneof(
      { arbitrary: fc.integer({ min: 1, max: 5 }), weight: 4 },
      { arbitrary: valid(schema), weight: 2 },
      { arbitrary: hostile.filter((v) => v === null || typeof v !== 'object'), weight: 1 },
    )
    .filter((v) => stringify(v) !== '');

function requestArb(op: Op): fc.Arbitrary<Req> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query' && p.name !== 'api_key');
  const pathRec: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of pathParams) pathRec[p.name] = pathValue(p.schema);
  const queryRec: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of queryParams)
    queryRec[p.name] = fc.oneof(
      valid(p.schema),
      hostile.filter((v) => typeof v !== 'string' || v.length < 1000),
    );
  const hasBody = op.body !== undefined || !['GET', 'DELETE'].includes(op.method);
  return fc.record({
    cred: fc.constantFrom<Cred>('valid', 'valid', 'valid', 'none', 'bogus', 'query'),
    path: fc.record(pathRec),
    query: fc.record(queryRec, { requiredKeys: [] }),
    body: valid(op.body ?? { type: 'object' }),
    mut: mutation,
    transport: hasBody
      ? fc.constantFrom<Transport>(
          'json',
          'json',
          'json',
          'json',
          'json',
          'json-charset',
          'text',
          'form',
          'malformed',
          'empty',
          'none',
          'huge',
        )
      : fc.constantFrom<Transport>('none', 'none', 'none', 'json', 'empty', 'text'),
  });
}

/** Long runs of one character shortened, for readable failure reports. */
function short(s: string, max = 400): string {
  return s.replace(/(.)\1{15,}/g, (run, c: string) => `${c}…×${run.length}`).slice(0, max);
}

function stringify(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
}

describeEachDb('OpenAPI-driven fuzzing', (dialect) => {
  let t: TestApp;
  let key = '';
  let doc: Schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'example' });
  const validators = new Map<string, ValidateFunction>();

  beforeAll(async () => {
    // Rate limits off: a 429 after a few requests would hide the handlers behind it.
    t = await makeTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });
    key = (await t.user({ phone: '+15555550100' })).apiKey;
    doc = (await t.request('GET', '/api/v0/openapi.json')).body;
  });
  afterAll(async () => {
    await t.app.close();
    await t.db.cleanup();
  });

  function validatorFor(op: Op, status: string, schema: Schema): ValidateFunction {
    const id = `${op.method} ${op.path} ${status}`;
    let v = validators.get(id);
    if (!v) {
      v = ajv.compile(schema);
      validators.set(id, v);
    }
    return v;
  }

  /** Sends one request; returns a description of what is wrong with the reply, or null. */
  async function probe(op: Op, r: Req): Promise<string | null> {
    let url = op.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(stringify(r.path[name])),
    );
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(r.query)) qs.set(k, stringify(v));
    if (r.cred === 'query') qs.set('api_key', key);
    if ([...qs].length) url += `?${qs.toString()}`;
    const headers: Record<string, string> = {};
    if (r.cred === 'valid') headers.authorization = `Bearer ${key}`;
    if (r.cred === 'bogus') headers.authorization = 'Bearer or_notarealkey0000000000000000000000000000000';
    const body = applyMutation(r.body, r.mut);
    let payload: string | undefined;
    switch (r.transport) {
      case 'json':
      case 'json-charset':
        headers['content-type'] =
          r.transport === 'json' ? 'application/json' : 'application/json; charset=utf-8';
        payload = JSON.stringify(body) ?? 'null';
        break;
      case 'text':
        headers['content-type'] = 'text/plain';
        payload = JSON.stringify(body) ?? '';
        break;
      case 'form':
        headers['content-type'] = 'application/x-www-form-urlencoded';
        payload = 'image=ubuntu&disk=10';
        break;
      case 'malformed':
        headers['content-type'] = 'application/json';
        payload = '{"image": "ubuntu", ';
        break;
      case 'empty':
        headers['content-type'] = 'application/json';
        payload = '';
        break;
      case 'huge':
        headers['content-type'] = 'application/json';
        payload = JSON.stringify({ blob: 'y'.repeat(t.config.bodyLimitBytes + 10) });
        break;
      case 'none':
        break;
    }
    const res = await t.app.inject({ method: op.method as 'GET', url, headers, payload });
    const where = `${op.method} ${short(url, 200)} [${r.transport}, ${r.cred}] → ${res.statusCode}`;
    if (res.statusCode >= 500) return `${where}: a 5xx: ${res.body.slice(0, 300)}`;
    const ct = res.headers['content-type'];
    let parsed: unknown;
    if (res.body.length > 0) {
      if (ct !== 'application/json')
        return `${where}: Content-Type ${String(ct)}, not exactly application/json`;
      try {
        parsed = JSON.parse(res.body);
      } catch {
        return `${where}: body is not JSON`;
      }
    }
    const status = String(res.statusCode);
    if (res.statusCode >= 400) {
      const e = parsed as { error?: unknown; msg?: unknown } | undefined;
      if (typeof e?.error !== 'string' || typeof e?.msg !== 'string')
        return `${where}: error body is not {error, msg}: ${res.body.slice(0, 300)}`;
    }
    if (r.cred === 'valid' && res.statusCode === 401 && /Invalid user key/.test(res.body)) {
      // The fuzzer revoked its own key (DELETE /auth/apikeys/{id}): carry on with a fresh account.
      key = (await t.user()).apiKey;
      return null;
    }
    const schema = op.responses[status] ?? op.responses[`${status[0]}XX`] ?? op.responses.default;
    if (res.statusCode < 300 && !(status in op.responses) && !(`${status[0]}XX` in op.responses)) {
      return `${where}: status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`;
    }
    if (schema && parsed !== undefined) {
      const v = validatorFor(op, status, schema);
      if (!v(parsed))
        return `${where}: reply does not match its documented schema: ${ajv.errorsText(v.errors)}; body ${res.body.slice(0, 300)}`;
    }
    return null;
  }

  it(
    `answers every documented route without a 5xx and as documented (${RUNS} requests)`,
    async () => {
      const ops = operations(doc).filter((o) => o.path.includes(ONLY));
      expect(ops.length).toBeGreaterThan(ONLY ? 0 : 5);
      const perOp = Math.max(3, Math.ceil(RUNS / ops.length));
      const failures: string[] = [];
      for (const op of ops) {
        const result = await fc.check(
          fc.asyncProperty(requestArb(op), async (r) => {
            const problem = await probe(op, r);
            if (problem) throw new Error(problem);
          }),
          { numRuns: perOp, seed: SEED, maxSkipsPerRun: 1 },
        );
        if (result.failed) {
          const e = result.errorInstance as Error | undefined;
          failures.push(
            `${short(e?.message ?? 'failed')}\n    (FUZZ_SEED=${result.seed}; request ${short(JSON.stringify(result.counterexample?.[0]) ?? '')})`,
          );
        }
      }
      expect(failures, failures.join('\n')).toEqual([]);
    },
    Math.max(120_000, RUNS * 30),
  );
});
