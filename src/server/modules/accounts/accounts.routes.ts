// GET /api/v0/users/current, PUT /api/v0/users/ (account settings, accounts.settings.ts), logout
// and ending every session. (POST /users/login/ is the two-factor module's: a password login may
// start a second factor.)
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { clearSessionCookie } from '../../http/session-cookie.js';
import { currentUser, logout, logoutEverywhere } from './accounts.service.js';
import { userSchema } from './accounts.view.js';
import { authErrors, errorSchema, idParams, successReply, type IdParams } from '../../http/schemas.js';
import { updateAccount } from './accounts.settings.js';
import { AccountErrors } from './accounts.errors.js';

export async function accountsRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get(
    '/api/v0/users/current',
    {
      config: { scope: 'user' },
      schema: {
        tags: ['users'],
        summary: 'The caller, with the credential presented as api_key',
        response: { 200: userSchema, 401: errorSchema },
      },
    },
    async (req) => currentUser(deps, requireAuth(req)),
  );

  // The official CLI's `set user --file F` sends the file's JSON object, with no id in the path.
  // The body is checked by updateAccount (every field named in its 400), not by a schema, so that
  // a refused field's message says how that field is changed.
  const settingsReply = {
    200: successReply({ user: userSchema }),
    ...authErrors,
  } as const;
  const settingsBody = {
    description:
      'fullname, billaddress_line1, billaddress_line2, billaddress_city, billaddress_zip, billaddress_country, billaddress_taxinfo, balance_threshold_enabled, balance_threshold',
  } as const;
  app.put<{ Body: unknown }>(
    '/api/v0/users',
    {
      config: { scope: 'user', access: 'write' },
      schema: {
        tags: ['users'],
        summary: "Change the caller's account settings (name, billing address, balance threshold)",
        body: settingsBody,
        response: settingsReply,
      },
    },
    async (req) => updateAccount(deps, requireAuth(req), req.body),
  );
  app.put<{ Params: IdParams; Body: unknown }>(
    '/api/v0/users/:id',
    {
      config: { scope: 'user', access: 'write' },
      schema: {
        tags: ['users'],
        summary: "PUT /users/ with the caller's own id in the path; another id is 404",
        params: idParams,
        body: settingsBody,
        response: settingsReply,
      },
    },
    async (req) => {
      const auth = requireAuth(req);
      if (req.params.id !== auth.user.id) throw AccountErrors.notYourAccount();
      return updateAccount(deps, auth, req.body);
    },
  );

  const ended = successReply({ sessions_ended: { type: 'integer' } });

  app.post(
    '/api/v0/users/logout',
    {
      schema: {
        tags: ['users'],
        summary: 'End the session presented (session_key Bearer or session cookie)',
        body: { type: ['object', 'null'], additionalProperties: false, properties: {} },
        response: { 200: ended, ...authErrors },
      },
    },
    async (req, reply) => {
      const auth = requireAuth(req);
      await logout(deps, auth);
      if (auth.via === 'cookie') clearSessionCookie(req, reply);
      return { success: true, msg: 'Logged out', sessions_ended: 1 };
    },
  );

  app.delete(
    '/api/v0/users/sessions',
    {
      config: { scope: 'user', access: 'write' },
      schema: {
        tags: ['users'],
        summary: "End all of the caller's sessions (CLI and browser); API keys stay valid",
        body: { type: ['object', 'null'], additionalProperties: false, properties: {} },
        response: { 200: ended, ...authErrors },
      },
    },
    async (req, reply) => {
      const auth = requireAuth(req);
      const n = await logoutEverywhere(deps, auth);
      if (auth.via === 'cookie') clearSessionCookie(req, reply);
      return { success: true, msg: `Ended ${n} session${n === 1 ? '' : 's'}`, sessions_ended: n };
    },
  );
}
