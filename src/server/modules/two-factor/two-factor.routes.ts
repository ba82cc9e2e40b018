// The 2FA endpoints (docs/two-factor.md). Thin: authenticate the
// way the credential table says, normalise the body, call one service function.
// Every route is `auth: 'optional'` so the module itself answers the published codes: 401
// missing_auth_value when neither Bearer nor secret is sent to a route that accepts a secret
// alone, 403 auth_error when a Bearer-only route gets no Bearer. An unknown Bearer is still 401
// "Invalid user key" and an expired session key 404, the two answers the CLI acts on, from the auth hook.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { setSessionCookie } from '../../http/session-cookie.js';
import { userSchema, userView } from '../accounts/accounts.view.js';
import { errorSchema } from '../../http/schemas.js';
import { TfaErrors } from './two-factor.errors.js';
import { bearer, bodySchema, personal, readBody, type TfaBody } from './two-factor.input.js';
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
import { methodSchema, tfaErrors } from './two-factor.view.js';

const cfg = { auth: 'optional', scope: 'tfa' } as const;
const BASE = '/api/v0/tfa';

const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties }) as const;
const ok = { success: { type: 'boolean' }, msg: { type: 'string' } } as const;
const secretReply = obj({ ...ok, secret: { type: 'string' } });
const codesReply = obj({ ...ok, backup_codes: { type: 'array', items: { type: 'string' } } });

function deprecated(reply: FastifyReply, successor: string): void {
  // Deprecated endpoints stay active but are not for new integrations (RFC 9745 / RFC 8288).
  reply.header('Deprecation', 'true');
  reply.header('Link', `<${successor}>; rel="successor-version"`);
}

export async function twoFactorRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post<{ Body: { email: string; password: string } }>(
    '/api/v0/users/login',
    {
      // The audit log records each attempt on an existing account (audit/audit.hooks.ts).
      config: { auth: 'none', audit: 'password-login' },
      schema: {
        tags: ['users'],
        summary: 'Password login: the user object and a session cookie, or a 2FA challenge',
        body: {
          type: 'object',
          required: ['email', 'password'],
          properties: {
            email: { type: 'string', maxLength: 320 },
            password: { type: 'string', maxLength: 1024 },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              ...userSchema.properties,
              success: { type: 'boolean' },
              tfa_required: { type: 'boolean' },
              tfa_secret: { type: 'string' },
              methods: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'integer' },
                    method: { type: 'string' },
                    label: { type: 'string' },
                    is_primary: { type: 'boolean' },
                  },
                },
              },
            },
          },
          400: errorSchema,
          401: errorSchema,
          429: errorSchema,
        },
      },
    },
    async (req, reply) => {
      const r = await passwordLogin(deps, req.body.email, req.body.password);
      if (r.kind === 'tfa') return { success: true, tfa_required: true, ...r.start };
      setSessionCookie(req, reply, r.session);
      return userView(r.user);
    },
  );

  /** Bearer, or (logged-out UI) the login secret alone; neither: 401 missing_auth_value. */
  async function smsCaller(req: FastifyRequest, b: TfaBody): Promise<SmsCaller> {
    if (req.auth) {
      const auth = personal(req.auth);
      return { user: auth.user, viaSecret: false, emailExempt: auth.user.is_admin === 1 };
    }
    const { user } = await loginCaller(deps, null, b.secret);
    return { user, viaSecret: true, emailExempt: user.is_admin === 1 };
  }

  async function sms(req: FastifyRequest, resend: boolean) {
    const b = readBody(req);
    const caller = await smsCaller(req, b);
    const r = await sendSmsCode(
      deps,
      caller,
      { phone_number: b.phone_number, tfa_method_id: b.tfa_method_id, secret: b.secret },
      { resend },
    );
    return { success: true, msg: smsSentMsg(r.phone), secret: r.secret };
  }

  async function confirm(req: FastifyRequest) {
    const auth = bearer(req);
    const b = readBody(req);
    return confirmNew(
      deps,
      auth.user,
      {
        tfa_method: b.tfa_method,
        code: b.code,
        secret: b.secret,
        phone_number: b.phone_number,
        label: b.label,
      },
      req.ip,
    );
  }

  const smsBody = bodySchema('phone_number', 'tfa_method_id', 'secret');
  const confirmBody = bodySchema('tfa_method', 'code', 'secret', 'phone_number', 'label');

  app.get(
    `${BASE}/status`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: '2FA status and methods',
        response: {
          200: obj({
            success: { type: 'boolean' },
            tfa_enabled: { type: 'boolean' },
            methods: { type: 'array', items: methodSchema },
            backup_codes_remaining: { type: 'integer' },
            new_method_authorized: { type: 'boolean' },
          }),
          ...tfaErrors,
        },
      },
    },
    async (req) => tfaStatus(deps, bearer(req).user),
  );

  app.post(
    `${BASE}/totp-setup`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'A new TOTP secret and otpauth:// URI (adds nothing)',
        body: bodySchema(),
        response: {
          200: obj({ secret: { type: 'string' }, provisioning_uri: { type: 'string' } }),
          ...tfaErrors,
        },
      },
    },
    async (req) => totpSetup(bearer(req).user),
  );

  app.post(
    `${BASE}/authorize-new-method`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Step 1 of adding a method: send a code, or authorize with a backup code',
        body: bodySchema('tfa_method', 'tfa_method_id', 'backup_code'),
        response: { 200: secretReply, ...tfaErrors },
      },
    },
    async (req) => {
      const auth = bearer(req);
      const b = readBody(req);
      return authorizeStart(
        deps,
        auth.user,
        { tfa_method: b.tfa_method, tfa_method_id: b.tfa_method_id, backup_code: b.backup_code },
        req.ip,
      );
    },
  );

  app.put(
    `${BASE}/authorize-new-method`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Step 2: the code opens the 30-minute add-method window',
        body: bodySchema('code', 'secret'),
        response: { 200: obj(ok), ...tfaErrors },
      },
    },
    async (req) => {
      const auth = bearer(req);
      const b = readBody(req);
      return authorizeConfirm(deps, auth.user, { code: b.code, secret: b.secret }, req.ip);
    },
  );

  app.post(
    `${BASE}/confirm-new`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Add an SMS or TOTP method (inside the window)',
        body: confirmBody,
        response: { 200: codesReply, ...tfaErrors },
      },
    },
    async (req) => confirm(req),
  );

  app.post(
    `${BASE}/email`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Send a 6-digit code to the verified e-mail address',
        body: bodySchema('secret'),
        response: { 200: secretReply, ...tfaErrors },
      },
    },
    async (req) => {
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
  );

  app.post(
    `${BASE}/sms`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Send an SMS code',
        body: smsBody,
        response: { 200: secretReply, ...tfaErrors },
      },
    },
    async (req) => sms(req, false),
  );
  app.post(
    `${BASE}/sms/resend`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Resend an SMS code (the previous one stops working)',
        body: smsBody,
        response: { 200: secretReply, ...tfaErrors },
      },
    },
    async (req) => sms(req, true),
  );

  app.post(
    `${BASE}`,
    {
      // With the login secret alone, the audit log finds the account through its challenge.
      config: { ...cfg, audit: 'tfa-login' },
      schema: {
        tags: ['2fa'],
        summary: 'Complete a 2FA login',
        body: bodySchema('tfa_method', 'code', 'secret', 'tfa_method_id', 'backup_code', 'admin'),
        response: { 200: obj({ ...userSchema.properties, success: { type: 'boolean' } }), ...tfaErrors },
      },
    },
    async (req, reply) => {
      const b = readBody(req);
      const r = await completeLogin(deps, req.auth, b, req.ip);
      if (r.cookie) setSessionCookie(req, reply, r.cookie);
      return r.body;
    },
  );

  app.delete(
    `${BASE}`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Remove a 2FA method (the last one disables 2FA)',
        body: bodySchema('tfa_method', 'code', 'secret', 'tfa_method_id', 'target_id', 'backup_code'),
        response: { 200: obj({ ...ok, remaining_methods: { type: 'integer' } }), ...tfaErrors },
      },
    },
    async (req) => {
      const auth = bearer(req);
      const b = readBody(req);
      return removeMethod(deps, auth.user, b, req.ip);
    },
  );

  app.put(
    `${BASE}/update`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Set the label or primary flag of an SMS or TOTP method',
        body: bodySchema('tfa_method_id', 'tfa_method', 'label', 'is_primary'),
        response: { 200: obj({ ...ok, method: methodSchema }), ...tfaErrors },
      },
    },
    async (req) => {
      const auth = bearer(req);
      const b = readBody(req);
      if (b.label !== undefined && b.label.trim().length > 30)
        throw TfaErrors.badRequest('label must be at most 30 characters');
      return updateMethod(
        deps,
        auth.user,
        {
          tfa_method: b.tfa_method,
          tfa_method_id: b.tfa_method_id,
          label: b.label?.trim(),
          is_primary: b.is_primary,
        },
        req.ip,
      );
    },
  );

  app.put(
    `${BASE}/regen-backup-codes`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        summary: 'Replace all backup codes with a fresh set of 10',
        body: bodySchema('tfa_method', 'code', 'secret', 'tfa_method_id', 'backup_code'),
        response: { 200: codesReply, ...tfaErrors },
      },
    },
    async (req) => {
      const auth = bearer(req);
      return regenBackupCodes(deps, auth.user, readBody(req), req.ip);
    },
  );

  // Deprecated but still active: same behaviour as their replacements, plus
  // a Deprecation header.
  app.post(
    `${BASE}/test`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        deprecated: true,
        summary: 'Deprecated: use POST /api/v0/tfa/sms/',
        body: smsBody,
        response: { 200: secretReply, ...tfaErrors },
      },
    },
    async (req, reply) => {
      deprecated(reply, `${BASE}/sms/`);
      return sms(req, false);
    },
  );
  app.post(
    `${BASE}/resend`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        deprecated: true,
        summary: 'Deprecated: use POST /api/v0/tfa/sms/resend/',
        body: smsBody,
        response: { 200: secretReply, ...tfaErrors },
      },
    },
    async (req, reply) => {
      deprecated(reply, `${BASE}/sms/resend/`);
      return sms(req, true);
    },
  );
  app.post(
    `${BASE}/test-submit`,
    {
      config: cfg,
      schema: {
        tags: ['2fa'],
        deprecated: true,
        summary: 'Deprecated: use POST /api/v0/tfa/confirm-new/',
        body: confirmBody,
        response: { 200: codesReply, ...tfaErrors },
      },
    },
    async (req, reply) => {
      deprecated(reply, `${BASE}/confirm-new/`);
      const auth = bearer(req);
      // A legacy account's 2FA is not tracked as method rows yet: it must regenerate backup codes
      // (which creates its SMS method) before using the old add-method call.
      if (auth.user.tfa_status === 'legacy') throw TfaErrors.untracked();
      return confirm(req);
    },
  );
}
