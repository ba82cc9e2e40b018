// GET /api/v0/users/current, PUT /api/v0/users/ (account settings, accounts.settings.ts), logout
// and ending every session. (POST /users/login/ is the two-factor module's: a password login may
// start a second factor.)
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import { clearSessionCookie } from '../../http/session-cookie.js';
import * as C from '../../../contract/schemas/accounts.js';
import { currentUser as userOf, logout as end, logoutEverywhere } from './accounts.service.js';
import { parseAccountUpdate, updateAccount as update } from './accounts.settings.js';
import { AccountErrors } from './accounts.errors.js';
import { createUserOrSubaccount } from './accounts.subaccounts.js';
import {
  changePassword as change,
  confirmPasswordReset as confirmReset,
  requestPasswordReset as requestReset,
  signUp,
  verifySignup as verify,
} from './accounts.tokens.js';

export const currentUser = route(C.currentUser)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => userOf(deps, requireAuth(req)),
});

/** The settings body's own messages (each refused field with how it is changed) come first. */
const settingsFirst = () => (req: { body: unknown }) => void parseAccountUpdate(req.body);

export const updateAccount = route(C.updateAccount)({
  config: { scope: 'user', access: 'write' },
  precheck: settingsFirst,
  handler: (deps) => async (req) => update(deps, requireAuth(req), req.body),
});

export const updateAccountById = route(C.updateAccountById)({
  config: { scope: 'user', access: 'write' },
  precheck: settingsFirst,
  handler: (deps) => async (req) => {
    const auth = requireAuth(req);
    if (req.params.id !== auth.user.id) throw AccountErrors.notYourAccount();
    return update(deps, auth, req.body);
  },
});

export const logout = route(C.logout)({
  handler: (deps) => async (req, reply) => {
    const auth = requireAuth(req);
    await end(deps, auth);
    if (auth.via === 'cookie') clearSessionCookie(req, reply);
    return { success: true, msg: 'Logged out', sessions_ended: 1 };
  },
});

export const endSessions = route(C.endSessions)({
  config: { scope: 'user', access: 'write' },
  handler: (deps) => async (req, reply) => {
    const auth = requireAuth(req);
    const n = await logoutEverywhere(deps, auth);
    if (auth.via === 'cookie') clearSessionCookie(req, reply);
    return { success: true, msg: `Ended ${n} session${n === 1 ? '' : 's'}`, sessions_ended: n };
  },
});

export const signup = route(C.signup)({
  config: { auth: 'none' },
  handler: (deps) => async (req) => signUp(deps, req.body),
});

/** POST /users/: a subaccount (parent_id "me", authenticated) or a sign-up (accounts.subaccounts.ts). */
export const createUser = route(C.createUser)({
  config: { auth: 'optional', scope: 'user', access: 'write' },
  handler: (deps) => async (req) => createUserOrSubaccount(deps, req.auth, req.body),
});

export const verifySignup = route(C.verifySignup)({
  config: { auth: 'none' },
  handler: (deps) => async (req) => verify(deps, req.body),
});

export const requestPasswordReset = route(C.requestPasswordReset)({
  config: { auth: 'none' },
  handler: (deps) => async (req) => requestReset(deps, req.body),
});

export const confirmPasswordReset = route(C.confirmPasswordReset)({
  config: { auth: 'none' },
  handler: (deps) => async (req) => confirmReset(deps, req.body),
});

export const changePassword = route(C.changePassword)({
  config: { scope: 'user', access: 'write' },
  handler: (deps) => async (req) => change(deps, requireAuth(req), req.body),
});

export const accountRoutes = [
  currentUser,
  updateAccount,
  updateAccountById,
  logout,
  endSessions,
  signup,
  createUser,
  verifySignup,
  requestPasswordReset,
  confirmPasswordReset,
  changePassword,
];

export async function accountsRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, accountRoutes);
}
