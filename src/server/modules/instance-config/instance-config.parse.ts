// The instance configuration: validation of the create-instance body (docs/market.md), whose
// rules a template must pass too. Pure; a module of its own below both instances and templates.
// Known fields are checked strictly; the other fields the CLI sends (python_utf8, lang_utf8,
// use_jupyter_lab, jupyter_dir, force, cancel_unavail, vm …) carry no meaning here and are
// accepted as they are. template_hash_id is read by instances/instances.create.ts, which merges the
// template into the body before this check.
import { assertPlainText } from '../../http/plain-text.js';
import { gunzipSync } from 'node:zlib';
import { ConfigErrors } from './instance-config.errors.js';
import { quoteValue } from '../../errors.js';
import { RUNTYPE_TOKENS } from '../../../contract/schemas/instances.js';

/** onstart is at most 4048 characters unless gzip+base64 encoded. */
export const ONSTART_MAX_CHARS = 4048;
/** Largest decoded onstart script we accept (64 KiB). */
export const ONSTART_MAX_DECODED = 65536;
export const DEFAULT_DISK_GB = 10;
export { RUNTYPE_TOKENS };
const RESERVED_ENV = new Set(['CONTAINER_API_KEY', 'CONTAINER_ID']);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const PORT_KEY = /^-p\s+(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/;

export interface PortRequest {
  container: number;
  host: number | null;
  proto: 'tcp' | 'udp';
}

export interface CreateRequest {
  image: string;
  disk: number;
  onstart: string;
  /** Environment variables (port requests removed). */
  env: Record<string, string>;
  ports: PortRequest[];
  /** env as given, port requests included (what the agent reads). */
  rawEnv: Record<string, string>;
  label: string;
  runtype: string;
  args: string[] | null;
  /** Bid price ($/h, whole machine) for an interruptible rental; null = on-demand. */
  price: number | null;
  imageLogin: string | null;
  extra: string | null;
  /** The ports the gateway serves by name (docs/gateway.md); [] when none. */
  portal: PortalEntry[];
}

/** A port of the instance served through the gateway (docs/gateway.md). */
export interface PortalEntry {
  name: string;
  port: number;
  /** Served to anyone, without the owner's token. */
  public: boolean;
  /** The path is passed on whole (`/i/ID/PORT/…`), for apps set up with that base URL. */
  keep_prefix: boolean;
}

/** A create body names at most this many portal ports. */
export const PORTAL_MAX = 16;

/** The body's `portal`: [{name, port, public?, keep_prefix?}], ports distinct. */
export function parsePortal(v: unknown): PortalEntry[] {
  if (v === undefined || v === null) return [];
  const shape = 'portal must be an array of {"name": "jupyter", "port": 8888, "public": false}';
  if (!Array.isArray(v) || v.length > PORTAL_MAX) throw bad(`${shape} (at most ${PORTAL_MAX})`);
  const out: PortalEntry[] = [];
  for (const e of v as unknown[]) {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw bad(shape);
    const o = e as Record<string, unknown>;
    const unknownKey = Object.keys(o).find((k) => !['name', 'port', 'public', 'keep_prefix'].includes(k));
    if (unknownKey !== undefined) throw bad(`portal: unknown field ${quoteValue(unknownKey)} (${shape})`);
    if (typeof o.port !== 'number' || !Number.isInteger(o.port) || o.port < 1 || o.port > 65535)
      throw bad('portal: each port must be a whole number from 1 to 65535');
    const name = o.name === undefined || o.name === null ? String(o.port) : o.name;
    if (typeof name !== 'string' || name.trim() === '' || name.length > 64)
      throw bad('portal: each name must be a string of 1 to 64 characters');
    assertPlainText('portal name', name);
    for (const k of ['public', 'keep_prefix'] as const)
      if (o[k] !== undefined && o[k] !== null && typeof o[k] !== 'boolean')
        throw bad(`portal: ${k} must be true or false`);
    if (out.some((x) => x.port === o.port)) throw bad(`portal: port ${o.port} is named twice`);
    out.push({
      name: name.trim(),
      port: o.port,
      public: o.public === true,
      keep_prefix: o.keep_prefix === true,
    });
  }
  return out;
}

const bad = (msg: string) => ConfigErrors.badRequest(msg);

function optString(b: Record<string, unknown>, k: string, max: number): string | null {
  const v = b[k];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw bad(`${k} must be a string`);
  if (v.length > max) throw bad(`${k} must be at most ${max} characters`);
  return v;
}

/** onstart as given, or decoded when gzip+base64; a 400 when it can't be. */
export function decodeOnstart(raw: string): string {
  const looksEncoded = /^\s*H4sI/.test(raw); // base64 of the gzip magic 1f 8b 08
  // Characters, not UTF-16 units: an emoji counts once.
  const chars = raw.length <= ONSTART_MAX_CHARS ? raw.length : Array.from(raw).length;
  if (chars <= ONSTART_MAX_CHARS && !looksEncoded) return raw;
  const compact = raw.replace(/\s+/g, '');
  let text: string | null = null;
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) {
    try {
      const buf = gunzipSync(Buffer.from(compact, 'base64'), { maxOutputLength: ONSTART_MAX_DECODED + 1 });
      const s = buf.toString('utf8');
      if (buf.length > ONSTART_MAX_DECODED)
        throw bad(`onstart decodes to more than ${ONSTART_MAX_DECODED} bytes`);
      if (!Buffer.from(s, 'utf8').equals(buf) || s.includes('\0'))
        throw bad('onstart decodes to something that is not a UTF-8 text script');
      text = s;
    } catch (err) {
      if (err instanceof Error && err.name === 'AppError') throw err;
      text = null;
    }
  }
  if (text !== null) return text;
  if (chars <= ONSTART_MAX_CHARS) return raw; // short and not really encoded: a plain script
  throw bad(
    `onstart is ${chars} characters; at most ${ONSTART_MAX_CHARS} are allowed unless it is gzip+base64 encoded`,
  );
}

/** A create body's env object, checked: variables, and port requests as `"-p 8080:8080": "1"`. */
export function parseEnv(v: unknown): {
  env: Record<string, string>;
  ports: PortRequest[];
  raw: Record<string, string>;
} {
  const env: Record<string, string> = {};
  const raw: Record<string, string> = {};
  const ports: PortRequest[] = [];
  if (v === undefined || v === null) return { env, ports, raw };
  if (typeof v !== 'object' || Array.isArray(v))
    throw bad('env must be an object of NAME: value (port requests as "-p 8080:8080": "1")');
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > 256) throw bad('env takes at most 256 entries');
  for (const [k, val] of entries) {
    if (typeof val !== 'string' && typeof val !== 'number' && typeof val !== 'boolean')
      throw bad(`env.${k} must be a string`);
    const s = String(val);
    if (s.length > 16384) throw bad(`env.${k} must be at most 16384 characters`);
    const key = k.trim();
    if (key.startsWith('-p')) {
      const m = PORT_KEY.exec(key);
      const host = m?.[1] === undefined ? null : Number(m[1]);
      const container = m ? Number(m[2]) : 0;
      if (!m || container < 1 || container > 65535 || (host !== null && (host < 1 || host > 65535))) {
        throw bad(
          `env: bad port request ${quoteValue(k)}: use "-p CONTAINER_PORT" or "-p HOST_PORT:CONTAINER_PORT" (1-65535, optional /tcp or /udp)`,
        );
      }
      const proto = m[3] === 'udp' ? 'udp' : 'tcp';
      if (!ports.some((p) => p.container === container && p.proto === proto))
        ports.push({ container, host, proto });
      raw[k] = s;
      continue;
    }
    if (!ENV_NAME.test(key) || key.length > 256)
      throw bad(`env: ${quoteValue(k)} is not a valid variable name`);
    if (RESERVED_ENV.has(key)) throw bad(`env: ${key} is set by openrig and cannot be given`);
    env[key] = s;
    raw[key] = s;
  }
  return { env, ports, raw };
}

/** A runtype as create accepts it (space-separated modes), normalised; "ssh" when none. */
export function parseRuntype(v: unknown): string {
  if (v === undefined || v === null || v === '') return 'ssh';
  if (typeof v !== 'string' || v.length > 100)
    throw bad('runtype must be a string such as "ssh", "ssh_proxy", "jupyter_proxy ssh_proxy" or "args"');
  const tokens = v.trim().split(/\s+/);
  for (const t of tokens) {
    if (!(RUNTYPE_TOKENS as readonly string[]).includes(t))
      throw bad(`runtype: unknown mode ${quoteValue(t)} (use ${RUNTYPE_TOKENS.join(', ')})`);
  }
  return tokens.join(' ');
}

/** Largest disk an instance may ask for, GB. */
export const MAX_DISK_GB = 1_000_000;

/** A disk size in GB as create accepts it: a positive number up to MAX_DISK_GB. */
export function parseDiskGb(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > MAX_DISK_GB)
    throw bad(`${field} must be a positive number of GB`);
  return v;
}

export function parseCreateBody(body: unknown): CreateRequest {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body))
    throw bad('The body must be a JSON object with at least image');
  const b = body as Record<string, unknown>;
  const image = b.image;
  if (typeof image !== 'string' || image.trim() === '')
    throw bad('image is required: a container image such as "pytorch/pytorch:latest"');
  if (image.length > 512 || /\s/.test(image.trim()))
    throw bad('image must be one image reference (no spaces, at most 512 characters)');
  assertPlainText('image', image);
  const disk = b.disk === undefined || b.disk === null ? DEFAULT_DISK_GB : parseDiskGb('disk', b.disk);
  let price: number | null = null;
  if (b.price !== undefined && b.price !== null) {
    if (typeof b.price !== 'number' || !Number.isFinite(b.price) || b.price <= 0 || b.price > 100000)
      throw bad('price (a bid, $/hour) must be a positive number, or null for on-demand');
    price = b.price;
  }
  const onstartRaw = optString(b, 'onstart', 1_000_000) ?? '';
  const label = optString(b, 'label', 1024) ?? '';
  assertPlainText('label', label);
  let args: string[] | null = null;
  if (b.args !== undefined && b.args !== null) {
    if (
      !Array.isArray(b.args) ||
      b.args.length > 256 ||
      !b.args.every((a) => typeof a === 'string' && a.length <= 16384)
    )
      throw bad('args must be an array of strings');
    args = b.args as string[];
  }
  if (b.client_id !== undefined && b.client_id !== null && typeof b.client_id !== 'string')
    throw bad('client_id must be a string ("me")');
  const { env, ports, raw } = parseEnv(b.env);
  return {
    image: image.trim(),
    disk,
    onstart: decodeOnstart(onstartRaw),
    env,
    ports,
    rawEnv: raw,
    label,
    runtype: parseRuntype(b.runtype),
    args,
    price,
    imageLogin: optString(b, 'image_login', 4096),
    extra: optString(b, 'extra', 16384),
    portal: parsePortal(b.portal),
  };
}
