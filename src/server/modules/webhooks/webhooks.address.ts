// Where deliveries may go. A URL must be https:// (http:// only when the operator allows it) and
// must carry no credentials. Its host is checked when the URL is set (`hostProblem`) and the
// address it resolves to again at send time, and the connection is made to that very address, so
// a DNS answer that changes between the check and the connection (DNS rebinding) cannot reach a
// forbidden one. Forbidden unless the operator lists them in OPENRIG_WEBHOOK_ALLOW_HOSTS:
// loopback, private, shared (CGNAT), link-local (cloud metadata at 169.254.169.254 included),
// unspecified, multicast and reserved ranges, in IPv4 and IPv6. An IPv6 address that carries an
// IPv4 address in a known place is judged by that IPv4 address: IPv4-mapped (::ffff:0:0/96),
// IPv4-translated (::ffff:0:0:0/96), IPv4-compatible (::/96), NAT64's well-known prefix
// (64:ff9b::/96) and 6to4 (2002::/16, the IPv4 address in its second and third groups). Ranges
// whose IPv4 address cannot be read back from the address alone are refused whole: NAT64's
// local-use prefix (64:ff9b:1::/48, where the operator picks the prefix length) and Teredo
// (2001::/32, a tunnel through a relay to an obfuscated IPv4 address).
import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

const FORBIDDEN_V4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const FORBIDDEN_V6: [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['3fff::', 20],
  ['100::', 64],
  ['64:ff9b:1::', 48],
  ['2001::', 32],
];

function forbiddenList(): BlockList {
  const b = new BlockList();
  for (const [a, n] of FORBIDDEN_V4) b.addSubnet(a, n, 'ipv4');
  for (const [a, n] of FORBIDDEN_V6) b.addSubnet(a, n, 'ipv6');
  return b;
}
const FORBIDDEN = forbiddenList();

/** The eight 16-bit groups of an IPv6 address (a zone after `%` ignored); null when it is not one. */
function v6Groups(addr: string): number[] | null {
  const a = addr.split('%')[0]!;
  if (isIP(a) !== 6) return null;
  let text = a.toLowerCase();
  // A trailing dotted quad is the last two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [b0, b1, b2, b3] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const part = (p: string | undefined) => (p ? p.split(':').map((g) => parseInt(g, 16)) : []);
  const hi = part(head);
  const lo = part(tail);
  const zeros = tail === undefined ? [] : new Array<number>(8 - hi.length - lo.length).fill(0);
  const groups = [...hi, ...zeros, ...lo];
  return groups.length === 8 ? groups : null;
}

const dotted = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address carries, if any: IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
 * `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, and 6to4
 * `2002:AABB:CCDD::/48` (a.b.c.d in its second and third groups).
 */
export function embeddedV4(addr: string): string | null {
  const g = v6Groups(addr);
  if (!g) return null;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return dotted(g[6]!, g[7]!);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return dotted(g[6]!, g[7]!);
  if (zero(0, 6)) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x2002) return dotted(g[1]!, g[2]!);
  return null;
}

export interface AddressPolicy {
  allowHttp: boolean;
  /** CIDR ranges (or single addresses) the operator allows despite the rules above. */
  allowHosts: string[];
}

export function allowList(cidrs: readonly string[]): BlockList {
  const b = new BlockList();
  for (const c of cidrs) {
    const [addr, bits] = c.split('/');
    const v = isIP(addr ?? '');
    if (v === 0) throw new Error(`not an IP address or CIDR range: ${JSON.stringify(c)}`);
    const type = v === 6 ? 'ipv6' : 'ipv4';
    b.addSubnet(addr!, bits === undefined ? (v === 6 ? 128 : 32) : Number(bits), type);
  }
  return b;
}

/** True when deliveries may connect to `addr` (an IP address). */
export function addressAllowed(address: string, allowed: BlockList): boolean {
  const addr = address.split('%')[0]!;
  const v4 = embeddedV4(addr);
  const a = v4 ?? addr;
  const type = isIP(a) === 6 ? 'ipv6' : 'ipv4';
  if (allowed.check(a, type) || (v4 !== null && allowed.check(addr, 'ipv6'))) return true;
  return !FORBIDDEN.check(a, type);
}

/** Checks a URL's form; returns the reason it is refused, or null. */
export function urlProblem(raw: string, policy: Pick<AddressPolicy, 'allowHttp'>): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'url must be an absolute https:// URL';
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && policy.allowHttp))
    return policy.allowHttp ? 'url must be http:// or https://' : 'url must be https://';
  if (u.username || u.password) return 'url must not contain a user name or password';
  if (!u.hostname) return 'url must name a host';
  if (raw.length > 2000) return 'url must be at most 2000 characters';
  return null;
}

export interface Resolved {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves the URL's host and picks the first address; throws when it is not allowed. The caller
 * connects to this address (and only this one).
 */
export async function resolveAllowed(
  hostname: string,
  allowed: BlockList,
  resolve: (host: string) => Promise<Resolved[]> = defaultResolve,
): Promise<Resolved> {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  const v = isIP(bare);
  const list: Resolved[] = v !== 0 ? [{ address: bare, family: v as 4 | 6 }] : await resolve(bare);
  const first = list[0];
  if (!first) throw new Error(`${bare} has no address`);
  if (!addressAllowed(first.address, allowed))
    throw new Error(`${bare} resolves to ${first.address}, which deliveries may not reach`);
  return first;
}

/**
 * The check at creation (and when a URL is changed): the reason the URL's host is refused, or
 * null. An address written in the URL is judged as it stands; a host name by every address it
 * resolves to now. A name that does not resolve (yet), or not within `timeoutMs`, is accepted
 * here and left to the check at send time, which every delivery makes anyway.
 */
export async function hostProblem(
  hostname: string,
  allowed: BlockList,
  resolve: (host: string) => Promise<Resolved[]> = defaultResolve,
  timeoutMs = 2000,
): Promise<string | null> {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  let list: Resolved[];
  if (isIP(bare) !== 0) list = [{ address: bare, family: isIP(bare) as 4 | 6 }];
  else {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<Resolved[]>((ok) => (timer = setTimeout(() => ok([]), timeoutMs)));
    list = await Promise.race([resolve(bare).catch((): Resolved[] => []), late]).finally(() =>
      clearTimeout(timer),
    );
  }
  const bad = list.find((a) => !addressAllowed(a.address, allowed));
  if (!bad) return null;
  return bad.address === bare
    ? `url must not point at ${bare}: loopback, private, link-local and reserved addresses are not reachable by webhooks`
    : `url must not point at ${bare}: it resolves to ${bad.address}, which webhooks may not reach (loopback, private, link-local or reserved)`;
}

async function defaultResolve(host: string): Promise<Resolved[]> {
  const r = await lookup(host, { all: true, verbatim: true });
  return r.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}
