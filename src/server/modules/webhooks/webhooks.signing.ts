// Signing per the Standard Webhooks convention: a secret is `whsec_` + base64 of random bytes;
// the signature of a message is `v1,` + base64(HMAC-SHA256(secret bytes, `${id}.${timestamp}.${body}`)),
// with the timestamp in whole seconds. During a rotation the header carries one signature per
// valid secret, separated by spaces, so a receiver holding either secret verifies the message.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: 24 random bytes (192 bits). */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

export function secretBytes(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
}

export function sign(secret: string, id: string, timestampS: number, body: string): string {
  const mac = createHmac('sha256', secretBytes(secret))
    .update(`${id}.${timestampS}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/** The three headers of a delivery attempt. */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampS: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': secrets.map((s) => sign(s, id, timestampS, body)).join(' '),
  };
}
