// GET /api/v0/users/current and POST /api/v0/users/login/.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { requireAuth } from '../../http/auth.js';
import { clearSessionCookie, setSessionCookie } from '../../http/session-cookie.js';
import { checkPassword, logout, logoutEverywhere } from './accounts.service.js';
import { createSession, PASSWORD_LOGIN } from './accounts.sessions.js';
import { clearSignInFailures } from './accounts.lockout.js';
import { tx } from '../../db/connection.js';
import { userSchema, userView } from './accounts.view.js';
import { beginTfaLogin } from '../two-factor/two-factor.login.js';
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
    async (req) => {
      const auth = requireAuth(req);
      // The CLI removes `api_key` from the user object and fails if it is missing.
      return { ...userView(auth.user, { teamId: auth.teamId }), api_key: auth.credential };
    },
  );

  app.post(
    '/api/v0/users/login',
    {
      config: { auth: 'none' },
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
      const { email, password } = req.body as { email: string; password: string };
      const user = await checkPassword(deps, email, password);
      if (user.tfa_status !== 'disabled') {
        const start = await beginTfaLogin(deps, user);
        return { success: true, tfa_required: true, tfa_secret: start.tfa_secret, methods: start.methods };
      }
      const now = deps.clock.now();
      const s = await tx(deps.store, async (db) => {
        await clearSignInFailures(db, user.email);
        return createSession(db, {
          userId: user.id,
          teamId: null,
          kind: 'cookie',
          isAdmin: false,
          now,
          ttlS: deps.config.sessionTtlS,
          origin: PASSWORD_LOGIN,
        });
      });
      setSessionCookie(req, reply, { token: s.token, expiresAt: s.expiresAt });
      return userView(user);
    },
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
