// POST /users/: the official CLI's `create subaccount` sends it with `parent_id: "me"`, and the
// caller makes an account of its own (a subaccount, one level deep: a subaccount makes none). The
// same path without a parent is a sign-up, exactly as POST /users/signup (OPENRIG_SIGNUP).
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { allows } from '../../../contract/permissions.js';
import { AppError, CommonErrors } from '../../errors.js';
import { AccountErrors } from './accounts.errors.js';
import { createUser, EMAIL_RE } from './accounts.service.js';
import { signUp } from './accounts.tokens.js';
import { parentOf } from './accounts.repo.js';

export interface CreateUserBody {
  email: string;
  password: string;
  username?: string | null;
  full_name?: string;
  host_only?: boolean | null;
  parent_id?: string | number | null;
}

/** The caller when `parent` names it ("me" or its own id); a 403 for anyone else's id. */
function parentIsCaller(parent: string | number, auth: AuthContext | null): AuthContext {
  if (!auth) throw CommonErrors.authMissing('A subaccount is made by its parent: send your API key');
  if (parent !== 'me' && Number(parent) !== auth.user.id)
    throw CommonErrors.forbidden(
      'parent_id must be "me" (or your own id): you make subaccounts of your own account only',
    );
  return auth;
}

export async function createUserOrSubaccount(
  deps: Deps,
  auth: AuthContext | null,
  body: CreateUserBody,
): Promise<Record<string, unknown>> {
  const parent = body.parent_id ?? null;
  if (parent === null || parent === '') {
    const r = await signUp(deps, { email: body.email, password: body.password, full_name: body.full_name });
    return r;
  }
  const caller = parentIsCaller(parent, auth);
  if (caller.via === 'instance_key' || !allows(caller.permissions, 'user', 'write'))
    throw new AppError(403, 'forbidden', 'This API key lacks write permission on user');
  if (caller.teamId !== null)
    throw CommonErrors.forbidden(
      'Make subaccounts from your personal account (a personal key), not for a team',
    );
  if ((await parentOf(deps.db, caller.user.id)) !== null)
    throw CommonErrors.forbidden('A subaccount cannot make subaccounts: ask its parent account');
  const email = typeof body.email === 'string' ? body.email.trim().toLowerCase() : '';
  if (!EMAIL_RE.test(email) || email.length > 254) throw AccountErrors.badEmail();
  if ([...body.password].length < 8 || body.password.length > 256) throw AccountErrors.badPassword();
  const username = (body.username ?? '').trim() || email;
  const hostOnly = body.host_only === true;
  const made = await createUser(deps, {
    email,
    password: body.password,
    fullName: body.full_name?.trim() ?? '',
    parent: { id: caller.user.id, username, hostOnly },
  });
  return {
    success: true,
    msg: `Subaccount ${made.id} (${email}) created; its API key is shown this once`,
    id: made.id,
    email,
    username,
    host_only: hostOnly,
    parent_id: caller.user.id,
    api_key: made.api_key,
  };
}
