// A user changes their own account settings: PUT /api/v0/users/ (the official CLI's
// `set user --file F` sends the file's JSON object there) and PUT /api/v0/users/{own id}/.
// Settable: fullname (users.full_name), the billing address (account_profiles), the balance
// threshold, which is the balance.low alert of the events module (balance_alerts; see
// docs/webhooks.md): openrig sends no e-mail for it, and a host's payout destination
// (paypal_email or wise_email; billing's payout_destinations, docs/payouts.md). Fields that protect the account (the
// e-mail address, the SMS 2FA number, a password) are refused with a 400 naming each and how it
// is changed; read-only and unknown fields are refused too. Every field is checked before
// anything is written, and the writes share one transaction: all or nothing.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { tx } from '../../db/connection.js';
import { hasControlChars, plainTextMessage } from '../../http/plain-text.js';
import { quoteValue } from '../../errors.js';
import { AccountErrors } from './accounts.errors.js';
import * as repo from './accounts.repo.js';
import { balanceAlertOf, setBalanceAlert } from '../webhooks/webhooks.service.js';
import { userView } from './accounts.view.js';
import {
  payoutDestinationProblem,
  writePayoutDestination,
  type PayoutMethod,
} from '../billing/billing.payouts.js';

/** The text fields and their longest value, in characters. */
export const TEXT_LIMITS = {
  fullname: 200,
  billaddress_line1: 200,
  billaddress_line2: 200,
  billaddress_city: 100,
  billaddress_zip: 32,
  billaddress_country: 100,
  billaddress_taxinfo: 100,
} as const;

export type BillingField = Exclude<keyof typeof TEXT_LIMITS, 'fullname'>;
export const BILLING_FIELDS = Object.keys(TEXT_LIMITS).filter((k) => k !== 'fullname') as BillingField[];

/** The largest balance threshold, dollars (as for PUT /api/v0/events/settings/). */
export const MAX_THRESHOLD_USD = 1e9;

const EMAIL_WHY = 'the sign-in address; the operator of this server changes it';
const PASSWORD_WHY = 'set by the operator of this server';

/**
 * Fields that protect the account or that openrig has no use for, with how each is changed. Kept
 * short: a refusal names every field given with its reason, and error messages stop at 300
 * characters (the `fields` of the error body lists them all).
 */
export const REFUSED_FIELDS: Record<string, string> = {
  email: EMAIL_WHY,
  normalized_email: EMAIL_WHY,
  username: 'openrig has none; the e-mail address is the sign-in name',
  phone_number: 'an SMS second factor: tfa send-sms then tfa activate adds one, tfa delete removes one',
  password: PASSWORD_WHY,
  new_password: PASSWORD_WHY,
  old_password: PASSWORD_WHY,
  current_password: PASSWORD_WHY,
  password_hash: PASSWORD_WHY,
  ssh_key: 'use create ssh-key and delete ssh-key (/api/v0/ssh/)',
  autobill_threshold: 'openrig has no automatic billing',
};

/** Fields of the user object that are shown but never set by the user. */
const READ_ONLY = new Set([
  'id',
  'api_key',
  'session_key',
  'balance',
  'credit',
  'is_admin',
  'sms_fraud',
  'tfa_status',
  'tfa_enabled',
  'legacy_tfa_user',
  'backup_codes_remaining',
  'email_verified',
  'email_verified_at',
  'team_id',
  'created_at',
]);

const SETTABLE = [
  ...Object.keys(TEXT_LIMITS),
  'balance_threshold_enabled',
  'balance_threshold',
  'paypal_email',
  'wise_email',
];

/** The payout fields of the user object and the method each sets. */
const PAYOUT_FIELDS: Record<string, PayoutMethod> = {
  paypal_email: 'paypal_manual',
  wise_email: 'wise_manual',
};

/** What an update changes; an absent field is left as it is. */
export interface AccountUpdate {
  fullname?: string;
  billing: Partial<Record<BillingField, string | null>>;
  thresholdEnabled?: boolean;
  /** Micro-dollars; null forgets the threshold (and needs the alert off). */
  thresholdMicros?: number | null;
  /** Where the host is paid; null forgets it (an empty or null paypal_email / wise_email). */
  payout?: { method: PayoutMethod; destination: string } | null;
  /** The fields given, for the reply's message. */
  fields: string[];
}

const bad = (msg: string, extra?: Record<string, unknown>) => AccountErrors.badSettings(msg, extra);

function text(field: keyof typeof TEXT_LIMITS, v: unknown): string | null {
  if (v === null) return null;
  if (typeof v !== 'string') throw bad(`${field} must be a string or null, not ${quoteValue(v, 40)}`);
  const s = v.trim();
  const max = TEXT_LIMITS[field];
  const n = [...s].length;
  if (n > max) throw bad(`${field} must be at most ${max} characters (it has ${n})`);
  if (hasControlChars(s)) throw bad(plainTextMessage(field));
  return s === '' ? null : s;
}

function flag(field: string, v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  // The official CLI's help lists every field as a string: "true" and "false" are taken too.
  if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
  throw bad(`${field} must be true or false, not ${quoteValue(v, 40)}`);
}

function dollars(field: string, v: unknown): number | null {
  if (v === null) return null;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v.trim()) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > MAX_THRESHOLD_USD)
    throw bad(
      `${field} must be a number of dollars from 0 to ${MAX_THRESHOLD_USD}, or null, not ${quoteValue(v, 40)}`,
    );
  return Math.round(n * 1e6);
}

/** Checks a whole update body; throws the 400 of the first kind of problem found, naming every field of it. */
export function parseAccountUpdate(body: unknown): AccountUpdate {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw bad(`The body must be a JSON object of account fields: ${SETTABLE.join(', ')}`);
  const b = { ...(body as Record<string, unknown>) };
  // openrig's own name of the field, as GET /users/current shows it.
  if ('full_name' in b) {
    if ('fullname' in b && b.fullname !== b.full_name)
      throw bad('fullname and full_name name the same field: give one of them');
    b.fullname = b.full_name;
    delete b.full_name;
  }
  const keys = Object.keys(b);
  const refused = keys.filter((k) => k in REFUSED_FIELDS);
  if (refused.length > 0)
    throw bad(
      `${refused.length === 1 ? 'This field' : 'These fields'} cannot be changed here: ${refused
        .map((k) => `${k} (${REFUSED_FIELDS[k]})`)
        .join('; ')}`,
      { fields: refused },
    );
  const readOnly = keys.filter((k) => READ_ONLY.has(k));
  if (readOnly.length > 0)
    throw bad(
      `Read-only ${readOnly.length === 1 ? 'field' : 'fields'} of the user object: ${readOnly.join(', ')}`,
      {
        fields: readOnly,
      },
    );
  const unknown = keys.filter((k) => !SETTABLE.includes(k));
  if (unknown.length > 0)
    throw bad(
      `Unknown ${unknown.length === 1 ? 'field' : 'fields'}: ${unknown.map((k) => quoteValue(k, 60)).join(', ')}; an account update takes ${SETTABLE.join(', ')}`,
      { fields: unknown },
    );
  if (keys.length === 0) throw bad(`Nothing to change: give one or more of ${SETTABLE.join(', ')}`);

  const out: AccountUpdate = { billing: {}, fields: keys };
  if ('fullname' in b) out.fullname = text('fullname', b.fullname) ?? '';
  for (const f of BILLING_FIELDS) if (f in b) out.billing[f] = text(f, b[f]);
  if ('balance_threshold_enabled' in b)
    out.thresholdEnabled = flag('balance_threshold_enabled', b.balance_threshold_enabled);
  if ('balance_threshold' in b) out.thresholdMicros = dollars('balance_threshold', b.balance_threshold);
  const payout = keys.filter((k) => k in PAYOUT_FIELDS);
  const given = payout.filter((k) => b[k] !== null && b[k] !== '');
  if (given.length > 1) throw bad(`A host is paid one way: give paypal_email or wise_email, not both`);
  if (given.length === 1) {
    const k = given[0]!;
    const v = b[k];
    if (typeof v !== 'string') throw bad(`${k} must be an e-mail address or null, not ${quoteValue(v, 40)}`);
    const problem = payoutDestinationProblem(PAYOUT_FIELDS[k]!, v);
    if (problem) throw bad(problem);
    out.payout = { method: PAYOUT_FIELDS[k]!, destination: v.trim() };
  } else if (payout.length > 0) out.payout = null;
  return out;
}

/**
 * The settings GET /users/current shows besides the user row's own fields: the billing address
 * (null: not given) and the balance alert.
 */
export interface AccountSettingsView extends Record<BillingField, string | null> {
  /** The balance.low alert is on. */
  balance_threshold_enabled: boolean;
  /** Dollars: the alert's threshold, or the one last given while it is off; null when none. */
  balance_threshold: number | null;
}

export async function accountSettings(db: Kysely<DB>, userId: number): Promise<AccountSettingsView> {
  const r = await repo.accountSettingsRow(db, userId);
  const micros = r?.alert_micros ?? r?.balance_threshold_micros ?? null;
  return {
    billaddress_line1: r?.billaddress_line1 ?? null,
    billaddress_line2: r?.billaddress_line2 ?? null,
    billaddress_city: r?.billaddress_city ?? null,
    billaddress_zip: r?.billaddress_zip ?? null,
    billaddress_country: r?.billaddress_country ?? null,
    billaddress_taxinfo: r?.billaddress_taxinfo ?? null,
    balance_threshold_enabled: r?.alert_micros !== null && r?.alert_micros !== undefined,
    balance_threshold: micros === null ? null : Number(micros) / 1e6,
  };
}

/**
 * PUT /users/: checks the body (parseAccountUpdate), then writes it in one transaction. The
 * balance alert is written only when it changes: re-arming an unchanged alert would make it
 * fire again.
 */
export async function updateAccount(
  deps: Pick<Deps, 'store' | 'db' | 'clock'>,
  auth: AuthContext,
  body: unknown,
) {
  const u = parseAccountUpdate(body);
  const userId = auth.user.id;
  const now = deps.clock.now();
  await tx(deps.store, async (trx) => {
    if (u.fullname !== undefined) await repo.setFullName(trx, userId, u.fullname);
    const profile: Parameters<typeof repo.upsertAccountProfile>[2] = { ...u.billing };
    if (u.thresholdEnabled !== undefined || u.thresholdMicros !== undefined) {
      const alert = await balanceAlertOf(trx, userId);
      const current = alert ? Number(alert.threshold_micros) : null;
      const remembered = (await repo.accountSettingsRow(trx, userId))?.balance_threshold_micros ?? null;
      const enabled = u.thresholdEnabled ?? current !== null;
      const threshold =
        u.thresholdMicros !== undefined
          ? u.thresholdMicros
          : (current ?? (remembered === null ? null : Number(remembered)));
      if (enabled && threshold === null)
        throw bad(
          'balance_threshold_enabled true needs a balance_threshold (dollars): none is set on this account',
        );
      if (!enabled && current !== null) await setBalanceAlert(trx, userId, null);
      if (enabled && threshold !== current) await setBalanceAlert(trx, userId, threshold);
      profile.balance_threshold_micros = threshold;
    }
    if (Object.keys(profile).length > 0) await repo.upsertAccountProfile(trx, userId, profile, now);
    if (u.payout !== undefined) await writePayoutDestination(trx, userId, u.payout, now);
  });
  const user = await repo.findUserById(deps.db, userId);
  return {
    success: true as const,
    msg: `Account updated: ${u.fields.join(', ')}`,
    user: { ...userView(user!, { teamId: auth.teamId }), ...(await accountSettings(deps.db, userId)) },
  };
}
