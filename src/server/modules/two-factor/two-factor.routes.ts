// The 2FA endpoints (docs/two-factor.md). Thin: authenticate the
// way the credential table says, normalise the body, call one service function.
// Every route is `auth: 'optional'` so the module itself answers the published codes: 401
// missing_auth_value when neither Bearer nor secret is sent to a route that accepts a secret
// alone, 403 auth_error when a Bearer-only route gets no Bearer. An unknown Bearer is still 401
// "Invalid user key" and an expired session key 404, the two answers the CLI acts on, from the auth hook.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { setSessionCookie } from '../../http/session-cookie.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/two-factor.js';
import { userView } from '../accounts/accounts.view.js';
import { TfaErrors } from './two-factor.errors.js';
import { bearer, personal, readBody, type TfaBody } from './two-factor.input.js';
import { completeLogin, loginCaller, passwordLogin } from './two-factor.login.js';
import { confirmNew, regenBackupCodes, removeMethod } from './two-factor.methods.js';
import { emailSentMsg, sendEmailCode, sendSmsCode, smsSentMsg, type SmsCaller } from './two-factor.send.js';
import {
  authorizeConfirm,
  authorizeStart,
  tfaStatus,
  totpSetup,
  updateMethod,
} from './two-factor.service.js';

const cfg = { auth: 'optional', scope: 'tfa' } as const;

function deprecated(reply: FastifyReply, successor: string): void {
  // Deprecated endpoints stay active but are not for new integrations (RFC 9745 / RFC 8288).
  reply.header('Deprecation', 'true');
  reply.header('Link', `<${successor}>; rel="successor-version"`);
}

/** Bearer, or (logged-out UI) the login secret alone; neither: 401 missing_auth_value. */
async function smsCaller(deps: Deps, req: FastifyRequest, b: TfaBody): Promise<SmsCaller> {
  if (req.auth) {
    const auth = personal(req.auth);
    return { user: auth.user, viaSecret: false, emailExempt: auth.user.is_admin === 1 };
  }
  const { user } = await loginCaller(deps, null, b.secret);
  return { user, viaSecret: true, emailExempt: user.is_admin === 1 };
}

async function sms(deps: Deps, req: FastifyRequest, resend: boolean) {
  const b = readBody(req);
  const caller = await smsCaller(deps, req, b);
  const r = await sendSmsCode(
    deps,
    caller,
    { phone_number: b.phone_number, tfa_method_id: b.tfa_method_id, secret: b.secret },
    { resend },
  );
  return { success: true, msg: smsSentMsg(r.phone), secret: r.secret };
}

async function confirm(deps: Deps, req: FastifyRequest) {
  const auth = bearer(req);
  const b = readBody(req);
  const { tfa_method, code, secret, phone_number, label } = b;
  return confirmNew(deps, auth.user, { tfa_method, code, secret, phone_number, label }, req.ip);
}

export const login = route(C.passwordLogin)({
  // The audit log records each attempt on an existing account (audit/audit.hooks.ts).
  config: { auth: 'none', audit: 'password-login' },
  handler: (deps) => async (req, reply) => {
    const r = await passwordLogin(deps, req.body.email, req.body.password);
    if (r.kind === 'tfa') return { success: true, tfa_required: true, ...r.start };
    setSessionCookie(req, reply, r.session);
    return userView(r.user);
  },
});

export const status = route(C.tfaStatus)({
  config: cfg,
  handler: (deps) => async (req) => tfaStatus(deps, bearer(req).user),
});

export const setupTotp = route(C.totpSetup)({
  config: cfg,
  handler: () => async (req) => totpSetup(bearer(req).user),
});

export const startAuthorize = route(C.authorizeStart)({
  config: cfg,
  handler: (deps) => async (req) => {
    const auth = bearer(req);
    const { tfa_method, tfa_method_id, backup_code } = readBody(req);
    return authorizeStart(deps, auth.user, { tfa_method, tfa_method_id, backup_code }, req.ip);
  },
});

export const confirmAuthorize = route(C.authorizeConfirm)({
  config: cfg,
  handler: (deps) => async (req) => {
    const auth = bearer(req);
    const { code, secret } = readBody(req);
    return authorizeConfirm(deps, auth.user, { code, secret }, req.ip);
  },
});

export const addMethod = route(C.confirmNew)({
  config: cfg,
  handler: (deps) => async (req) => confirm(deps, req),
});

export const sendEmail = route(C.sendEmail)({
  config: cfg,
  handler: (deps) => async (req) => {
    const b = readBody(req);
    if (req.auth) {
      const auth = personal(req.auth);
      const r = await sendEmailCode(deps, auth.user, { secret: b.secret, viaSecret: false });
      return { success: true, msg: emailSentMsg(auth.user.email), secret: r.secret };
    }
    const { user } = await loginCaller(deps, null, b.secret);
    const r = await sendEmailCode(deps, user, { secret: b.secret, viaSecret: true });
    return { success: true, msg: emailSentMsg(user.email), secret: r.secret };
  },
});

export const sendSms = route(C.sendSms)({
  config: cfg,
  handler: (deps) => async (req) => sms(deps, req, false),
});

export const resendSms = route(C.resendSms)({
  config: cfg,
  handler: (deps) => async (req) => sms(deps, req, true),
});

export const tfaLogin = route(C.tfaLogin)({
  // With the login secret alone, the audit log finds the account through its challenge.
  config: { ...cfg, audit: 'tfa-login' },
  handler: (deps) => async (req, reply) => {
    const r = await completeLogin(deps, req.auth, readBody(req), req.ip);
    if (r.cookie) setSessionCookie(req, reply, r.cookie);
    return r.body;
  },
});

export const deleteMethod = route(C.removeMethod)({
  config: cfg,
  handler: (deps) => async (req) => {
    const auth = bearer(req);
    return removeMethod(deps, auth.user, readBody(req), req.ip);
  },
});

export const changeMethod = route(C.updateMethod)({
  config: cfg,
  handler: (deps) => async (req) => {
    const auth = bearer(req);
    const b = readBody(req);
    if (b.label !== undefined && b.label.trim().length > 30)
      throw TfaErrors.badRequest('label must be at most 30 characters');
    const { tfa_method, tfa_method_id, is_primary } = b;
    const label = b.label?.trim();
    return updateMethod(deps, auth.user, { tfa_method, tfa_method_id, label, is_primary }, req.ip);
  },
});

export const newBackupCodes = route(C.regenBackupCodes)({
  config: cfg,
  handler: (deps) => async (req) => {
    const auth = bearer(req);
    return regenBackupCodes(deps, auth.user, readBody(req), req.ip);
  },
});

export const legacySms = route(C.legacySms)({
  config: cfg,
  handler: (deps) => async (req, reply) => {
    deprecated(reply, `${C.sendSms.url}/`);
    return sms(deps, req, false);
  },
});

export const legacyResend = route(C.legacyResend)({
  config: cfg,
  handler: (deps) => async (req, reply) => {
    deprecated(reply, `${C.resendSms.url}/`);
    return sms(deps, req, true);
  },
});

export const legacyConfirm = route(C.legacyConfirm)({
  config: cfg,
  handler: (deps) => async (req, reply) => {
    deprecated(reply, `${C.confirmNew.url}/`);
    const auth = bearer(req);
    // A legacy account's 2FA is not tracked as method rows yet: it must regenerate backup codes
    // (which creates its SMS method) before using the old add-method call.
    if (auth.user.tfa_status === 'legacy') throw TfaErrors.untracked();
    return confirm(deps, req);
  },
});

export const twoFactorRouteList = [
  login,
  status,
  setupTotp,
  startAuthorize,
  confirmAuthorize,
  addMethod,
  sendEmail,
  sendSms,
  resendSms,
  tfaLogin,
  deleteMethod,
  changeMethod,
  newBackupCodes,
  legacySms,
  legacyResend,
  legacyConfirm,
];

export async function twoFactorRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, twoFactorRouteList);
}
