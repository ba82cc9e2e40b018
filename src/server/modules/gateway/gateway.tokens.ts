// The gateway's signed tokens (docs/gateway.md, "Access"): a link's `?openrig_token=` and the
// cookie it sets carry the same form, `PAYLOAD.SIGNATURE`, where PAYLOAD (base64url JSON) names
// the instance, the owner it was made for and when it expires, and SIGNATURE is its HMAC-SHA256
// under a key derived from the server's secret key (OPENRIG_SECRET_KEY, the same in every process
// and node). Nothing is stored: a token is checked by its signature, its expiry and the instance's
// owner now. A token made for one instance opens none other.
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface GatewayClaims {
  /** The instance. */
  i: number;
  /** The user it was made for (the instance's owner then). */
  u: number;
  /** Expiry, epoch ms. */
  e: number;
}

function keyOf(secretKey: Buffer): Buffer {
  return createHmac('sha256', secretKey).update('openrig-gateway-token-v1').digest();
}

function sign(secretKey: Buffer, payload: string): Buffer {
  return createHmac('sha256', keyOf(secretKey)).update(payload).digest();
}

export function makeToken(secretKey: Buffer, c: GatewayClaims): string {
  const payload = Buffer.from(JSON.stringify({ i: c.i, u: c.u, e: c.e })).toString('base64url');
  return `${payload}.${sign(secretKey, payload).toString('base64url')}`;
}

/** The token's claims when its signature holds and it has not expired at `now`; else null. */
export function readToken(secretKey: Buffer, token: string, now: number): GatewayClaims | null {
  if (token.length > 512) return null;
  const dot = token.indexOf('.');
  if (dot <= 0) return null;
  const payload = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const want = sign(secretKey, payload);
  if (given.length !== want.length || !timingSafeEqual(given, want)) return null;
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const o = c as Partial<GatewayClaims>;
  if (!Number.isSafeInteger(o.i) || !Number.isSafeInteger(o.u) || typeof o.e !== 'number') return null;
  if (o.e <= now) return null;
  return { i: o.i!, u: o.u!, e: o.e };
}
