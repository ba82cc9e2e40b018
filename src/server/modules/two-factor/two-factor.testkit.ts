// Helpers for the 2FA tests (not used by the server). Structural types only, so this file
// builds with the rest of src/ without importing test/.
import { readFileSync, existsSync } from 'node:fs';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { totpAt } from './two-factor.codes.js';

export interface KitReply {
  status: number;
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
}

export interface KitApp {
  request(
    method: string,
    url: string,
    opts?: { key?: string | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<KitReply>;
  clock: { now(): number; advance(ms: number): void };
  config: { sms: { outboxFile: string } };
  deps: { db: Kysely<DB> };
}

export async function lastEmailCode(t: KitApp, to: string): Promise<string> {
  const row = await t.deps.db
    .selectFrom('email_outbox')
    .select(['text_body', 'id'])
    .where('to_addr', '=', to)
    .where('category', '=', 'tfa.code')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  const m = row ? /\b(\d{6})\b/.exec(row.text_body) : null;
  if (!m) throw new Error(`no code e-mail to ${to}`);
  return m[1]!;
}

export function lastSmsCode(t: KitApp, to: string): string {
  const file = t.config.sms.outboxFile;
  if (!existsSync(file)) throw new Error('no SMS outbox yet');
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { to: string; body: string });
  const last = lines.filter((l) => l.to === to).at(-1);
  const m = last ? /\b(\d{6})\b/.exec(last.body) : null;
  if (!m) throw new Error(`no SMS to ${to}`);
  return m[1]!;
}

/** Opens the add-method window: by e-mail for a user without methods, else with `auth`. */
export async function authorize(
  t: KitApp,
  key: string,
  email: string,
  auth?: { backup_code?: string; totp?: string },
): Promise<void> {
  if (auth?.backup_code) {
    const r = await t.request('POST', '/api/v0/tfa/authorize-new-method/', {
      key,
      body: { backup_code: auth.backup_code },
    });
    if (r.status !== 200) throw new Error(`authorize: ${r.status} ${JSON.stringify(r.body)}`);
    return;
  }
  const body = auth?.totp ? { tfa_method: 'totp' } : { tfa_method: 'email' };
  const r1 = await t.request('POST', '/api/v0/tfa/authorize-new-method/', { key, body });
  if (r1.status !== 200) throw new Error(`authorize step 1: ${r1.status} ${JSON.stringify(r1.body)}`);
  const code = auth?.totp ? totpAt(auth.totp, t.clock.now()) : await lastEmailCode(t, email);
  const r2 = await t.request('PUT', '/api/v0/tfa/authorize-new-method/', {
    key,
    body: { code, secret: r1.body.secret },
  });
  if (r2.status !== 200) throw new Error(`authorize step 2: ${r2.status} ${JSON.stringify(r2.body)}`);
}

/** Adds a TOTP method to a user without methods; returns its secret, id and backup codes. */
export async function enableTotp(
  t: KitApp,
  key: string,
  email: string,
): Promise<{ secret: string; id: number; backupCodes: string[] }> {
  await authorize(t, key, email);
  const setup = await t.request('POST', '/api/v0/tfa/totp-setup/', { key });
  const secret = setup.body.secret as string;
  const r = await t.request('POST', '/api/v0/tfa/confirm-new/', {
    key,
    body: { tfa_method: 'totp', code: totpAt(secret, t.clock.now()), secret, label: 'phone app' },
  });
  if (r.status !== 200) throw new Error(`confirm-new totp: ${r.status} ${JSON.stringify(r.body)}`);
  const status = await t.request('GET', '/api/v0/tfa/status/', { key });
  const m = (status.body.methods as { id: number; method: string }[]).find((x) => x.method === 'totp')!;
  // The confirming step is spent; the next code must come from a later step.
  t.clock.advance(30_000);
  return { secret, id: m.id, backupCodes: (r.body.backup_codes as string[] | undefined) ?? [] };
}

/** Adds an SMS method (window must be open or the user must have no methods). */
export async function addSms(
  t: KitApp,
  key: string,
  email: string,
  phone: string,
  opts: { skipAuthorize?: boolean } = {},
): Promise<{ id: number; backupCodes: string[] }> {
  if (!opts.skipAuthorize) await authorize(t, key, email);
  const s = await t.request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: phone } });
  if (s.status !== 200) throw new Error(`sms: ${s.status} ${JSON.stringify(s.body)}`);
  const r = await t.request('POST', '/api/v0/tfa/confirm-new/', {
    key,
    body: { tfa_method: 'sms', code: lastSmsCode(t, phone), secret: s.body.secret, phone_number: phone },
  });
  if (r.status !== 200) throw new Error(`confirm-new sms: ${r.status} ${JSON.stringify(r.body)}`);
  const status = await t.request('GET', '/api/v0/tfa/status/', { key });
  const m = (status.body.methods as { id: number; method: string; phone_number: string }[])
    .filter((x) => x.method === 'sms')
    .at(-1)!;
  return { id: m.id, backupCodes: (r.body.backup_codes as string[] | undefined) ?? [] };
}
