// Request bodies of the 2FA routes. Schemas are permissive on purpose: the published API gives exact
// error codes for some bad values (invalid_tfa_method, missing_auth_value, missing_params), so
// those are checked here in code; plain type errors are 400 bad_request from the schema.
// Existing clients may send `tfa_method_id` as a string of digits; empty fields are left out
// (an empty string counts as absent).
import { PLAIN_TEXT_PATTERN } from '../../http/plain-text.js';
import { rowId } from '../../http/schemas.js';
import type { FastifyRequest } from 'fastify';
import type { AuthContext } from '../../identity.js';
import { TfaErrors } from './two-factor.errors.js';
import type { TfaMethodName } from './two-factor.verify.js';

const idField = {
  anyOf: [rowId, { type: 'string', pattern: '^[0-9]{1,15}$' }],
} as const;

export const bodyFields = {
  tfa_method: { type: 'string', description: 'sms, totp or email' },
  tfa_method_id: { ...idField, description: 'Method id (an integer; a string of digits is accepted)' },
  target_id: { ...idField, description: 'Method to remove' },
  code: { type: 'string', description: '6-digit code' },
  secret: {
    type: 'string',
    maxLength: 200,
    description: 'tfa_secret of a challenge (for confirm-new TOTP: the base32 secret)',
  },
  backup_code: { type: 'string', maxLength: 64, description: 'XXXX-XXXX-XXXX' },
  phone_number: { type: 'string', maxLength: 32, description: 'E.164' },
  label: { type: 'string', pattern: PLAIN_TEXT_PATTERN, description: 'At most 30 characters' },
  is_primary: { type: 'boolean' },
  admin: { type: 'boolean' },
} as const;

export function bodySchema<K extends keyof typeof bodyFields>(...keys: K[]) {
  const properties: Record<string, unknown> = {};
  for (const k of keys) properties[k] = bodyFields[k];
  return { type: ['object', 'null'], properties } as const;
}

export interface TfaBody {
  tfa_method?: TfaMethodName;
  tfa_method_id?: number;
  target_id?: number;
  code?: string;
  secret?: string;
  backup_code?: string;
  phone_number?: string;
  label?: string;
  is_primary?: boolean;
  admin?: boolean;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function id(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v !== '') return Number(v);
  return undefined;
}

/** Normalises the body; invalid_tfa_method for an unsupported tfa_method value. */
export function readBody(req: FastifyRequest): TfaBody {
  const raw: unknown = req.body;
  const b: Record<string, unknown> = raw !== null && typeof raw === 'object' ? { ...raw } : {};
  const out: TfaBody = {};
  const method = str(b.tfa_method);
  if (method !== undefined) {
    const m = method.toLowerCase();
    if (m !== 'sms' && m !== 'totp' && m !== 'email') throw TfaErrors.invalidMethod();
    out.tfa_method = m;
  }
  const set = <K extends keyof TfaBody>(k: K, v: TfaBody[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set('tfa_method_id', id(b.tfa_method_id));
  set('target_id', id(b.target_id));
  set('code', str(b.code)?.trim());
  set('secret', str(b.secret)?.trim());
  set('backup_code', str(b.backup_code)?.trim());
  set('phone_number', str(b.phone_number)?.trim());
  if (typeof b.label === 'string') out.label = b.label;
  if (typeof b.is_primary === 'boolean') out.is_primary = b.is_primary;
  if (typeof b.admin === 'boolean') out.admin = b.admin;
  return out;
}

/** 2FA is managed in the personal context only: a team-context key gets team_user_forbidden. */
export function personal(auth: AuthContext): AuthContext {
  if (auth.teamId !== null) throw TfaErrors.teamForbidden();
  return auth;
}

/** Bearer-only 2FA routes: 403 auth_error without a valid Bearer or session (docs/api.md). */
export function bearer(req: FastifyRequest): AuthContext {
  if (!req.auth) throw TfaErrors.authError('No valid authentication: send Authorization: Bearer <API key>');
  return personal(req.auth);
}
