// Requests exactly as the marketplace's official Python CLI (vast.py, over python-requests) puts
// them on the wire: its headers, its JSON text (Python's json.dumps: ", " and ": " separators,
// non-ASCII escaped), its query strings (quote_plus of a string, or of the JSON of anything
// else), `/api/v0` in front of a path that names no version. GET requests carry no body;
// PUT, POST and DELETE carry `{}` when the command gives none. These are wire facts, observed
// by pointing the CLI at a recording server; no code of the CLI is used.
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';

export interface CliRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** As the CLI names it: `/instances/7/` (v0 implied) or `/api/v1/instances/`. */
  path: string;
  query?: Record<string, unknown>;
  /** The JSON body; undefined for none (GET). */
  json?: unknown;
  /** The API key; null sends no Authorization header at all. */
  key: string | null;
  /** The path is from the server's root (the serverless calls), not under /api/v0. */
  root?: boolean;
}

export interface CliReply {
  status: number;
  contentType: string | undefined;
  text: string;
  body: any;
}

/** Python's json.dumps(v) with its default separators and ensure_ascii. */
export function pyJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return Number.isInteger(v) && !Object.is(v, -0) ? String(v) : pyFloat(v);
  if (typeof v === 'string')
    return JSON.stringify(v).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  if (v instanceof PyFloat) return pyFloat(v.value);
  return `{${Object.entries(v as Record<string, unknown>)
    .map(([k, x]) => `${pyJson(k)}: ${pyJson(x)}`)
    .join(', ')}}`;
}

/** A Python float (argparse `type=float`): 20 is sent as `20.0`. */
export class PyFloat {
  constructor(readonly value: number) {}
}
export const f = (n: number) => new PyFloat(n);

function pyFloat(n: number): string {
  const s = String(n);
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

/** urllib.parse.quote_plus: everything but letters, digits and `_.-~` escaped, space as `+`. */
export function quotePlus(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

export function cliUrl(path: string, query?: Record<string, unknown>, root = false): string {
  const full = root || /^\/api\/v\d+\//.test(path) ? path : `/api/v0${path}`;
  if (!query || Object.keys(query).length === 0) return full;
  const q = Object.entries(query)
    .map(([k, v]) => `${k}=${quotePlus(typeof v === 'string' ? v : pyJson(v))}`)
    .join('&');
  return `${full}?${q}`;
}

/** Sends one request as the CLI does and returns the reply as the CLI sees it. */
export async function cli(t: TestApp, r: CliRequest): Promise<CliReply> {
  const headers: Record<string, string> = {
    'user-agent': 'python-requests/2.34.2',
    'accept-encoding': 'gzip, deflate',
    accept: '*/*',
    connection: 'keep-alive',
  };
  if (r.key !== null) headers.authorization = `Bearer ${r.key}`;
  let payload: string | undefined;
  if (r.json !== undefined) {
    payload = pyJson(r.json);
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  const res = await t.app.inject({
    method: r.method,
    url: cliUrl(r.path, r.query, r.root),
    headers,
    payload,
  });
  let body: any;
  try {
    body = res.body ? JSON.parse(res.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, contentType: res.headers['content-type'] as string, text: res.body, body };
}

/** The CLI formats these fields of a table row; each must be absent/null or of this kind. */
export type Kind = 'num' | 'int' | 'str' | 'any';

export function expectTableFields(row: Record<string, unknown>, fields: Record<string, Kind>): void {
  for (const [name, kind] of Object.entries(fields)) {
    const v = row[name];
    if (v === undefined || v === null) continue;
    if (kind === 'num') expect(typeof v, name).toBe('number');
    if (kind === 'int') expect(Number.isInteger(v), name).toBe(true);
    if (kind === 'str') expect(typeof v, name).toBe('string');
  }
}

/** A reply the CLI accepts as JSON: 2xx and exactly `application/json`. */
export function expectOk(r: CliReply): void {
  expect(r.status, r.text).toBe(200);
  expect(r.contentType).toBe('application/json');
}

/** `create instance`'s body: every option the user did not give is sent as null or false. */
export const cliCreateBody = (over: Record<string, unknown> = {}) => ({
  client_id: 'me',
  image: 'ubuntu:22.04',
  env: {},
  price: null,
  disk: 10,
  label: null,
  extra: null,
  onstart: null,
  image_login: null,
  python_utf8: false,
  lang_utf8: false,
  use_jupyter_lab: false,
  jupyter_dir: null,
  force: false,
  cancel_unavail: false,
  template_hash_id: null,
  user: null,
  runtype: 'ssh',
  ...over,
});
