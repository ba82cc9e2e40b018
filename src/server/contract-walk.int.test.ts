// The request schemas the OpenAPI document shows are the ones the server enforces. The walk reads
// the served document (so a route added later is walked too) and, for each operation:
// - makes a valid request from its schemas (each field's example, else the simplest value the
//   schema takes, checked with Ajv) and expects no 400 for its shape;
// - for each constraint the document states on a parameter or on the body (type, required, enum,
//   minimum and maximum, minLength and maxLength, pattern, minItems and maxItems, additionalProperties
//   false, and the rules over several fields: anyOf and oneOf of required fields, with none of them
//   given, and what a branch or an allOf part asks of a field), sends that valid request with that
//   one value made wrong, and expects it refused: 400
//   (or 422 where the document lists 422: the published maintenance texts), among the documented
//   replies.
import { beforeAll, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import addFormatsImport from 'ajv-formats';
import { describeEachDb } from '../../test/helpers/db.js';
import { useTestApp, type Reply } from '../../test/helpers/app.js';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ strict: false, allErrors: false }));
ajv.addKeyword({ keyword: 'example' });

type Json = unknown;
type Where = 'path' | 'query' | 'header' | 'body';

interface Operation {
  name: string;
  method: string;
  path: string;
  op: any;
}

/** A request: values of each part (the body as JSON). */
interface Req {
  path: Record<string, Json>;
  query: Record<string, Json>;
  header: Record<string, Json>;
  body: Json;
  /** No body is sent (the schema allows none). */
  noBody: boolean;
}

const typesOf = (s: any): string[] =>
  s?.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];

function valid(schema: any, v: Json): boolean {
  try {
    const ok: unknown = ajv.validate(schema, v);
    return ok === true;
  } catch {
    return false;
  }
}

/** Strings to try for a string schema, the first the schema takes wins. */
const STRINGS = [
  'a',
  'abc',
  'x1',
  '1',
  'A1b2C3d4',
  'me',
  'a'.repeat(8),
  'ssh-ed25519 AAAA',
  '[1]',
  '{}',
  '2',
];

/** A schema with a branch of its anyOf or oneOf: both required lists, each property's rules of both. */
function merged(rest: any, branch: any): any {
  const properties: Record<string, any> = { ...rest.properties };
  for (const [k, p] of Object.entries<any>(branch.properties ?? {}))
    properties[k] = { ...properties[k], ...p };
  return {
    ...rest,
    ...branch,
    required: [...(rest.required ?? []), ...(branch.required ?? [])],
    properties,
  };
}

/** A schema with its allOf parts merged in: one schema for each choice of their anyOf/oneOf branches. */
function flattened(schema: any): any[] {
  const { allOf, ...rest } = schema;
  let out: any[] = [rest];
  for (const part of allOf as any[]) {
    const { anyOf, oneOf, ...plain } = part;
    const choices: any[] = anyOf ?? oneOf ?? [{}];
    out = out.flatMap((s) => choices.map((c) => merged(merged(s, plain), c)));
  }
  return out;
}

/** A value the schema takes (its example first); undefined when none is found. */
function example(schema: any): Json {
  if (schema === undefined || schema === true) return {};
  if (schema.example !== undefined && valid(schema, schema.example)) return schema.example;
  if (Array.isArray(schema.examples)) for (const e of schema.examples) if (valid(schema, e)) return e;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum.find((e: Json) => e !== null) ?? schema.enum[0];
  if (Array.isArray(schema.allOf)) {
    for (const s of flattened(schema)) {
      const v = example(s);
      if (v !== undefined && valid(schema, v)) return v;
    }
    return undefined;
  }
  for (const key of ['anyOf', 'oneOf'] as const)
    if (Array.isArray(schema[key])) {
      // A branch that adds to the schema around it (`anyOf: [{required: [a]}, {required: [b]}]`
      // beside its properties) is tried merged with it.
      const { [key]: branches, ...rest } = schema;
      const around = Object.keys(rest).some((k) => k !== 'description' && k !== 'example');
      for (const branch of branches) {
        const v = example(around ? merged(rest, branch) : branch);
        if (v !== undefined && valid(schema, v)) return v;
      }
      return undefined;
    }
  const types = typesOf(schema);
  const type = types.find((t) => t !== 'null') ?? (types.length ? 'null' : 'object');
  let candidates: Json[] = [];
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return true;
    case 'integer':
    case 'number': {
      const lo = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
      candidates = [Math.max(1, lo), lo, schema.maximum, 1, 0];
      break;
    }
    case 'string': {
      const n = Math.max(1, schema.minLength ?? 1);
      // A description's "e.g. …" is the document's own example.
      const eg = typeof schema.description === 'string' ? /e\.g\. (.+)$/.exec(schema.description) : null;
      candidates = [...(eg ? [eg[1]] : []), ...STRINGS.filter((s) => s.length >= n), 'a'.repeat(n)];
      break;
    }
    case 'array': {
      const item = example(schema.contains ?? schema.items);
      if (item === undefined) return undefined;
      candidates = [Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item), []];
      break;
    }
    case 'object': {
      const o: Record<string, Json> = {};
      const required: string[] = schema.required ?? [];
      for (const k of required) {
        const v = example(schema.properties?.[k] ?? {});
        if (v === undefined) return undefined;
        o[k] = v;
      }
      // Enough optional fields for minProperties.
      for (const [k, p] of Object.entries<any>(schema.properties ?? {})) {
        if (Object.keys(o).length >= (schema.minProperties ?? 0)) break;
        if (k in o) continue;
        const v = example(p);
        if (v !== undefined) o[k] = v;
      }
      candidates = [o];
      break;
    }
  }
  return candidates.find((c) => c !== undefined && valid(schema, c));
}

/** One fault: a path into the request and the wrong value there (or the field removed). */
interface Fault {
  what: string;
  where: Where;
  /** Property names from the part's root; [] is the part itself (the body). */
  at: string[];
  /** The value to put there; `remove` deletes the field. */
  value?: Json;
  remove?: boolean;
  /** The error code the refusal answers (the schema's x-error-code); bad_request or any when absent. */
  code?: string;
}

const SAMPLES: [string, Json][] = [
  ['object', { k: 1 }],
  ['array', [1]],
  ['string', 'x'],
  ['number', 1.5],
  ['integer', 7],
  ['boolean', true],
  ['null', null],
];

const jsonType = (v: Json): string =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'array'
      : typeof v === 'number'
        ? Number.isInteger(v)
          ? 'integer'
          : 'number'
        : typeof v;

const takesType = (types: string[], v: Json) => {
  const t = jsonType(v);
  return types.includes(t) || (t === 'integer' && types.includes('number'));
};

/** A string the pattern refuses (one that is not refused for anything else, if possible). */
function notMatching(schema: any): string | undefined {
  const re = new RegExp(schema.pattern, 'u');
  const tries = ['!', ' ', 'x y', '\u0007', '-', 'A', '0', 'zz', '..', '\u200b', '\u2028', 'é'];
  return tries.find((s) => !re.test(s) && (schema.maxLength ?? 1e9) >= s.length);
}

/** The faults of one schema node at `at` in part `where`, and of its properties and items. */
function faultsOf(schema: any, base: Json, where: Where, at: string[], out: Fault[]): void {
  if (!schema || typeof schema !== 'object') return;
  const name = [where, ...at].join('.');
  // A rule of a schema with an x-error-code answers that code (its type still bad_request).
  const code: unknown = schema['x-error-code'];
  const add = (f: Fault, isType = false) =>
    out.push(typeof code === 'string' && !isType ? { ...f, code } : f);
  const types = typesOf(schema);
  const text = where !== 'body'; // path, query and header values arrive as text, coerced
  if (types.length > 0) {
    if (text) {
      // Only a text that cannot become the type is wrong.
      if (!types.includes('string'))
        add({ what: `${name}: not a ${types.join('|')}`, where, at, value: 'x' }, true);
      if (types.includes('integer') && !types.includes('string') && !types.includes('number'))
        add({ what: `${name}: a fraction for an integer`, where, at, value: '1.5' }, true);
    } else {
      const wrong = SAMPLES.find(([, v]) => !takesType(types, v));
      if (wrong)
        add({ what: `${name}: a ${wrong[0]}, not ${types.join('|')}`, where, at, value: wrong[1] }, true);
    }
  }
  if (Array.isArray(schema.enum)) {
    const sample = typeof base === 'number' ? 987654 : 'not-one-of-them';
    if (!schema.enum.includes(sample)) add({ what: `${name}: not in its enum`, where, at, value: sample });
  }
  const isNum = typeof base === 'number';
  const step = types.includes('integer') && !types.includes('number') ? 1 : 0.5;
  if (isNum || (text && (types.includes('integer') || types.includes('number')))) {
    const wrap = (n: number) => (text ? String(n) : n);
    if (typeof schema.minimum === 'number')
      add({ what: `${name}: below its minimum`, where, at, value: wrap(schema.minimum - step) });
    if (typeof schema.exclusiveMinimum === 'number')
      add({
        what: `${name}: at its exclusive minimum`,
        where,
        at,
        value: wrap(schema.exclusiveMinimum),
      });
    if (typeof schema.maximum === 'number')
      add({ what: `${name}: above its maximum`, where, at, value: wrap(schema.maximum + step) });
    if (typeof schema.exclusiveMaximum === 'number')
      add({
        what: `${name}: at its exclusive maximum`,
        where,
        at,
        value: wrap(schema.exclusiveMaximum),
      });
  }
  if (typeof base === 'string' || (text && types.includes('string'))) {
    const s = typeof base === 'string' && base.length > 0 ? base : 'a';
    if (typeof schema.maxLength === 'number')
      add({
        what: `${name}: longer than maxLength`,
        where,
        at,
        value: s + s.slice(-1).repeat(schema.maxLength + 1 - s.length),
      });
    // An empty path segment is another URL (no route), not this operation with a short value.
    if (typeof schema.minLength === 'number' && schema.minLength > (where === 'path' ? 1 : 0))
      add({
        what: `${name}: shorter than minLength`,
        where,
        at,
        value: s.slice(0, schema.minLength - 1),
      });
    if (typeof schema.pattern === 'string') {
      const bad = notMatching(schema);
      if (bad !== undefined) add({ what: `${name}: not matching its pattern`, where, at, value: bad });
    }
  }
  if (Array.isArray(base)) {
    if (typeof schema.minItems === 'number' && schema.minItems > 0)
      add({
        what: `${name}: fewer than minItems`,
        where,
        at,
        value: base.slice(0, schema.minItems - 1),
      });
    if (typeof schema.maxItems === 'number' && base.length > 0)
      add({
        what: `${name}: more than maxItems`,
        where,
        at,
        value: Array.from({ length: schema.maxItems + 1 }, () => base[0]),
      });
    if (base.length > 0 && schema.items) faultsOf(schema.items, base[0], where, [...at, '0'], out);
  }
  if (base !== null && typeof base === 'object' && !Array.isArray(base) && where === 'body') {
    const o = base as Record<string, Json>;
    for (const k of schema.required ?? [])
      add({ what: `${name}.${k}: missing (required)`, where, at: [...at, k], remove: true });
    if (schema.additionalProperties === false)
      add({ what: `${name}: an undeclared field`, where, at: [...at, 'zz_undeclared'], value: 1 });
    if (typeof schema.minProperties === 'number' && schema.minProperties > 0 && at.length === 0)
      add({ what: `${name}: fewer than minProperties`, where, at, value: {} });
    for (const [k, p] of Object.entries<any>(schema.properties ?? {})) {
      const v = k in o ? o[k] : example(p);
      if (v === undefined) continue;
      faultsOf(p, v, where, [...at, k], out);
    }
    // A rule over several fields: none of the alternatives (each field a branch requires left out),
    // and the rules a branch or an allOf part puts on a field; each kept when it makes the value wrong.
    for (const key of ['anyOf', 'oneOf'] as const) {
      const branches: any[] | undefined = schema[key];
      if (!Array.isArray(branches)) continue;
      const names = new Set(branches.flatMap((b) => (b?.required ?? []) as string[]));
      if (names.size > 0) {
        const without = Object.fromEntries(Object.entries(o).filter(([k]) => !names.has(k)));
        if (!valid(schema, without))
          add({
            what: `${name}: none of its ${key} alternatives (${[...names].join(', ')})`,
            where,
            at,
            value: without,
          });
      }
      for (const b of branches)
        if (b?.properties) partFaults(schema, { properties: b.properties }, o, where, at, out);
    }
    if (Array.isArray(schema.allOf))
      for (const part of schema.allOf) partFaults(schema, part, o, where, at, out);
  }
}

/** The faults of `part` (a branch's or an allOf part's rules) that make `o` wrong for `schema`. */
function partFaults(
  schema: any,
  part: any,
  o: Record<string, Json>,
  where: Where,
  at: string[],
  out: Fault[],
) {
  const found: Fault[] = [];
  faultsOf(part, o, where, at, found);
  for (const f of found) if (!valid(schema, setAt(o, f.at.slice(at.length), f))) out.push(f);
}

function setAt(root: Json, at: string[], f: Fault): Json {
  if (at.length === 0) return f.value;
  const copy: any = Array.isArray(root) ? [...root] : { ...(root as object) };
  const [k, ...rest] = at as [string, ...string[]];
  if (rest.length === 0) {
    if (f.remove) delete copy[k];
    else copy[k] = f.value;
    return copy;
  }
  const child = copy[k] ?? (rest[0] === '0' ? [] : {});
  copy[k] = setAt(child, rest, f);
  return copy;
}

function withFault(req: Req, f: Fault): Req {
  const next: Req = { ...req, path: { ...req.path }, query: { ...req.query }, header: { ...req.header } };
  if (f.where === 'body') {
    next.body = setAt(req.body ?? {}, f.at, f);
    next.noBody = false;
    return next;
  }
  const part = next[f.where];
  const [k] = f.at as [string];
  if (f.remove) delete part[k];
  else part[k] = f.value;
  return next;
}

const asText = (v: Json) => (typeof v === 'string' ? v : JSON.stringify(v));

/** The operations of the served document, with their parameters and body schema. */
function operations(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries<any>(doc.paths))
    for (const [method, op] of Object.entries<any>(methods))
      ops.push({ name: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, op });
  return ops;
}

/** A parameter's schema with its description (the document puts that beside the schema). */
const paramSchema = (p: any) => ({ ...p.schema, ...(p.description ? { description: p.description } : {}) });

const bodySchemaOf = (op: any) => op.requestBody?.content?.['application/json']?.schema;

/**
 * The valid request with one optional parameter or top-level body field more, each with its example
 * value: what the document says each takes.
 */
function optionals(o: Operation, base: Req): [string, Req][] {
  const out: [string, Req][] = [];
  for (const p of o.op.parameters ?? []) {
    if (p.required || p.in === 'path' || p.name === 'api_key') continue;
    const v = example(paramSchema(p));
    if (v === undefined) continue;
    const req = { ...base, [p.in]: { ...(base as any)[p.in], [p.name]: v } };
    out.push([`${p.in} ${p.name}=${asText(v)}`, req]);
  }
  const body = bodySchemaOf(o.op);
  const b = base.body;
  if (body && b !== null && typeof b === 'object' && !Array.isArray(b))
    for (const [k, s] of Object.entries<any>(body.properties ?? {})) {
      if (k in b) continue;
      const v = example(s);
      if (v === undefined) continue;
      const withField = { ...b, [k]: v };
      if (!valid(body, withField)) continue;
      out.push([`body ${k}=${asText(v)}`, { ...base, body: withField, noBody: false }]);
    }
  return out;
}

/** The valid request of an operation, or why none could be made. */
function validRequest(o: Operation): Req | string {
  const req: Req = { path: {}, query: {}, header: {}, body: undefined, noBody: true };
  for (const p of o.op.parameters ?? []) {
    if (!p.required && p.in !== 'path') continue;
    const v = example(paramSchema(p));
    if (v === undefined) return `no value for ${p.in} ${p.name}`;
    (req as any)[p.in][p.name] = v;
  }
  const body = bodySchemaOf(o.op);
  if (body !== undefined) {
    // A body the schema lets be absent or null is sent as an object all the same when it may be one.
    const v = example(body);
    if (v === undefined) return 'no valid body';
    // A long poll answers at once when the request asks for the shortest wait its document allows.
    const wait = body.properties?.timeout_s;
    if (wait && typeof wait.minimum === 'number' && v !== null && typeof v === 'object')
      (v as Record<string, Json>).timeout_s = wait.minimum;
    req.body = v;
    req.noBody = false;
  }
  return req;
}

/**
 * Valid requests that may be refused for something besides their shape: the account's state, the
 * clock, rows named by id, another value of the request. No schema states those.
 */
const NOT_SHAPE: Record<string, string> = {
  'PUT /api/v0/users body balance_threshold_enabled=true': 'the alert on needs a threshold the account has',
  'POST /api/v0/users/logout the smallest request': 'an API key is no session to end',
  'GET /api/v1/instances query after_token=a': 'a token this server gave out',
  'GET /api/v1/invoices query after_token=a': 'a token this server gave out',
  'GET /api/v0/charges query after_token=a': 'a token this server gave out',
  'PUT /api/v0/asks/{id} the smallest request': 'an SSH key the account registered',
  'POST /api/v0/asks/{id} the smallest request': 'an SSH key the account registered',
  'PUT /api/v0/tfa/authorize-new-method the smallest request': 'a challenge the server gave out',
  'GET /api/v0/users/me/machine-earnings query sday=1': 'at most 366 days, through today',
  'GET /api/v0/users/me/invoices query sdate=1': 'at most 366 days, through now',
  'PUT /api/v0/machines/{id}/list body end_date=1': 'a time in the future',
  'PUT /api/v0/machines/create_asks body end_date=1': 'a time in the future',
  'POST /api/v0/machines/maintenances/batch the smallest request': 'sdate in the future',
  'DELETE /api/v0/machines/maintenances/batch the smallest request': "none of the machines is the caller's",
  'PUT /api/v0/machines/{id}/dnotify the smallest request': 'sdate in the future',
  'POST /api/v0/tfa/email body secret=a': 'a challenge the server gave out',
  'POST /api/v0/tfa/sms body secret=a': 'a challenge the server gave out',
  'POST /api/v0/tfa/test body secret=a': 'a challenge the server gave out',
  'POST /api/v0/tfa/resend body secret=a': 'a challenge the server gave out',
  'POST /api/v0/tfa/sms/resend body secret=a': 'a challenge the server gave out',
  'POST /api/v0/tfa/sms the smallest request':
    'a number on the account, unless phone_number or tfa_method_id gives one',
  'POST /api/v0/tfa/sms/resend the smallest request':
    'a number on the account, unless phone_number or tfa_method_id gives one',
  'POST /api/v0/tfa/test the smallest request':
    'a number on the account, unless phone_number or tfa_method_id gives one',
  'POST /api/v0/tfa/resend the smallest request':
    'a number on the account, unless phone_number or tfa_method_id gives one',
  'POST /api/v0/tfa the smallest request': 'an account with 2FA',
  'DELETE /api/v0/tfa the smallest request': 'an account with 2FA',
  'PUT /api/v0/tfa/regen-backup-codes the smallest request': 'an account with 2FA',
  'GET /api/v0/events/ query after=a': "one of the caller's events",
  'POST /api/v0/volumes the smallest request': 'room on the machine',
  'POST /api/v0/users/signup/verify the smallest request': 'a link the server sent',
  'POST /api/v0/users/password-reset/confirm the smallest request': 'a link the server sent',
  'PUT /api/v0/users/password the smallest request': "the account's current password",
  'POST /api/v0/commands/schedule_job body request_body={}':
    'one job per request: the smallest request made it',
  'POST /api/v0/commands/schedule_job body instance_id=1':
    'one job per request: the smallest request made it',
  'GET /api/v0/quotas the smallest request': 'a team the caller is in',
  'DELETE /api/v0/quotas the smallest request': 'a team the caller is in',
  'PUT /api/v0/commands/transfer_credit the smallest request': 'a recipient account that exists',
  'PUT /api/v0/commands/copy_direct the smallest request': "two running instances of the caller's",
  'PUT /api/v0/commands/rsync the smallest request': "two running instances of the caller's",
  'POST /api/v0/machines/{id}/reports the smallest request': 'a machine the caller rented',
  'DELETE /api/v0/team the smallest request': 'a team context (a team key or a switched session)',
  'POST /api/v0/team/invite the smallest request': 'a team context (a team key or a switched session)',
  'GET /api/v0/team/members the smallest request': 'a team context (a team key or a switched session)',
  'DELETE /api/v0/team/members/{id} the smallest request':
    'a team context (a team key or a switched session)',
  'PUT /api/v0/team/members/{id} the smallest request': 'a team context (a team key or a switched session)',
  'POST /api/v0/team/roles the smallest request': 'a team context (a team key or a switched session)',
  'GET /api/v0/team/roles/{name} the smallest request': 'a team context (a team key or a switched session)',
  'DELETE /api/v0/team/roles/{name} the smallest request':
    'a team context (a team key or a switched session)',
  'GET /api/v0/team/roles-full the smallest request': 'a team context (a team key or a switched session)',
  'PUT /api/v0/team/roles/{name} the smallest request': 'a team context (a team key or a switched session)',
  'POST /api/v0/team/switch the smallest request': "a console session: an API key's team is fixed",
};

/**
 * Shape rules the server enforces that the document does not state yet: each an open mismatch (none
 * today). The walk fails when one of them holds (remove it here) and when a new one appears.
 */
const OPEN: Record<string, string> = {};

describeEachDb('the document is what the server enforces', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'false' });
  let key: string;
  let ops: Operation[] = [];

  beforeAll(async () => {
    // The requests name rows by id 1: another account's, so no request ends the walker's own key.
    await t().user();
    key = (await t().user()).apiKey;
    ops = operations((await t().request('GET', '/api/v0/openapi.json')).body);
  });

  async function send(o: Operation, r: Req): Promise<Reply> {
    let url = o.path.replace(/\{([^}]+)\}/g, (_m, n: string) => encodeURIComponent(asText(r.path[n])));
    const q = Object.entries(r.query)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(asText(v))}`)
      .join('&');
    if (q) url += `?${q}`;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(r.header)) headers[k] = asText(v);
    return t().request(o.method, url, {
      key,
      headers,
      ...(r.noBody ? {} : { rawBody: JSON.stringify(r.body ?? null) }),
      ...(r.noBody ? {} : { headers: { ...headers, 'content-type': 'application/json' } }),
    });
  }

  it('walks every operation of the document', () => {
    expect(ops.length).toBeGreaterThan(100);
  });

  it('refuses each value a documented constraint forbids, with a documented 400', async () => {
    const wrong: string[] = [];
    let sent = 0;
    for (const o of ops) {
      const base = validRequest(o);
      if (typeof base === 'string') continue;
      const faults: Fault[] = [];
      for (const p of o.op.parameters ?? [])
        faultsOf(
          paramSchema(p),
          (base as any)[p.in][p.name] ?? example(paramSchema(p)),
          p.in as Where,
          [p.name],
          faults,
        );
      const body = bodySchemaOf(o.op);
      if (body !== undefined) faultsOf(body, base.body, 'body', [], faults);
      const codes = Object.keys(o.op.responses ?? {});
      for (const f of faults) {
        const r = await send(o, withFault(base, f));
        sent++;
        const ok = r.status === 400 || (r.status === 422 && codes.includes('422'));
        if (!ok) wrong.push(`${o.name} ${f.what}: ${r.status} ${r.raw.slice(0, 120)}`);
        else if (f.code !== undefined && r.body?.error !== f.code)
          wrong.push(`${o.name} ${f.what}: ${r.body?.error} instead of ${f.code}`);
        else if (!codes.includes(String(r.status)))
          wrong.push(`${o.name} ${f.what}: ${r.status} not documented`);
      }
    }
    expect(sent).toBeGreaterThan(200);
    expect(wrong).toEqual([]);
  });

  it('takes the valid request of each operation without a 400 for its shape', async () => {
    const refused: string[] = [];
    const refusedKeys = new Set<string>();
    const unmade: string[] = [];
    for (const o of ops) {
      const base = validRequest(o);
      if (typeof base === 'string') {
        unmade.push(`${o.name}: ${base}`);
        continue;
      }
      const codes = Object.keys(o.op.responses ?? {});
      // A route the server refuses whole (not_supported) documents only its 400.
      if (codes.length === 1 && codes[0] === '400') continue;
      // Each optional field is tried once the smallest request is taken (else it says nothing more).
      for (const [what, req] of [['the smallest request', base] as const, ...optionals(o, base)]) {
        const r = await send(o, req);
        if (r.status === 400 || r.status === 422 || r.status >= 500) {
          const k = `${o.name} ${what}`;
          refusedKeys.add(k);
          if (r.status >= 500 || !(k in NOT_SHAPE || k in OPEN))
            refused.push(`${k}: ${r.status} ${r.raw.slice(0, 160)}`);
          if (req === base) break;
        }
      }
    }
    expect(unmade).toEqual([]);
    expect(refused).toEqual([]);
    // A mismatch fixed is taken off the open list.
    expect(Object.keys(OPEN).filter((k) => !refusedKeys.has(k))).toEqual([]);
  });
});
