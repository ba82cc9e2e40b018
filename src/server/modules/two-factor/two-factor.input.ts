// Request bodies of the 2FA routes (their schemas: src/contract/schemas/two-factor.ts). The
// schemas state the shape rules, each refusal with the published code (invalid_tfa_method,
// missing_params); the same checks stay here and in the services for what a schema cannot hold
// (missing_auth_value, which depends on the account's methods) and as a second guard.
// Existing clients may send `tfa_method_id` as a string of digits; empty fields are left out
// (an empty string counts as absent).
import type { FastifyRequest } from 'fastify';
import type { AuthContext } from '../../identity.js';
import { TfaErrors } from './two-factor.errors.js';
import type { TfaMethodName } from './two-factor.verify.js';

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
