// GET /api/v0/users/current, logout and ending every session. (POST /users/login/ is the
// two-factor module's: a password login may start a second factor.)
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { requireAuth } from '../../http/auth.js';
import { clearSessionCookie } from '../../http/session-cookie.js';
import { currentUser, logout, logoutEverywhere } from './accounts.service.js';
import { userSchema } from './accounts.view.js';
import { authErrors, errorSchema } from '../../http/schemas.js';

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

  const ended = {
    type: 'object',
    properties: {
      success: { type: 'boolean' },
      msg: { type: 'string' },
      sessions_ended: { type: 'integer' },
    },
  } as const;

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
