// API keys (permissions in README.md). The key is returned once, at creation;
// only its SHA-256 is stored. A key can't mint or revoke a key with more power than itself.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { AppError, CommonErrors } from '../../errors.js';
import { insertApiKey, revokeKeySessions } from '../accounts/accounts.service.js';
import { tx } from '../../db/connection.js';
import { findKeyById, findLiveKey, listLiveKeys, revokeLiveKey, type ApiKeyRow } from './api-keys.repo.js';
import {
  PERMISSION_FAMILIES,
  allows,
  parsePermissions,
  type Permissions,
} from '../../../contract/permissions.js';
import { apiKeyEvent, recordEvent } from '../webhooks/webhooks.events.js';

export interface ApiKeyView {
  id: number;
  name: string;
  key_prefix: string;
  /** As the creator gave them (openrig's format or the marketplace's), else the families held. */
  permissions: unknown;
  team_id: number | null;
  created_at: number;
  last_used_at: number | null;
}

function view(r: ApiKeyRow): ApiKeyView {
  return {
    id: r.id,
    name: r.name,
    key_prefix: r.key_prefix,
    permissions:
      r.permissions_given !== null
        ? JSON.parse(r.permissions_given)
        : r.permissions
          ? (JSON.parse(r.permissions) as Permissions)
          : 'full',
    team_id: r.team_id,
    created_at: r.created_at / 1000,
    last_used_at: r.last_used_at === null ? null : r.last_used_at / 1000,
  };
}

/**
 * Whose keys these are: in a team context the member's (a team key belongs to the person, and acts
 * for the team within their role), else the account's.
 */
const keyOwner = (auth: AuthContext): number => auth.member?.userId ?? auth.user.id;

function isSubset(requested: Permissions | null, held: Permissions | null): boolean {
  if (held === null) return true;
  if (requested === null) return false;
  return PERMISSION_FAMILIES.every((f) => {
    const want = requested[f];
    return !want || allows(held, f, want);
  });
}

/**
 * Creates a key. `permissions` is openrig's format or the marketplace's
 * (`{"api": {category: {}}}`, mapped onto families); either is shown back as given.
 */
export async function createApiKey(
  deps: Deps,
  auth: AuthContext,
  body: { name?: string | null; permissions?: unknown },
) {
  const parsed = parsePermissions(body.permissions);
  if (!parsed.ok) throw CommonErrors.badRequest(parsed.msg);
  if (!isSubset(parsed.value, auth.permissions)) {
    throw new AppError(403, 'forbidden', 'A key cannot create a key with permissions it does not hold');
  }
  const now = deps.clock.now();
  const name = (body.name ?? '').trim() || 'api key';
  const given =
    body.permissions === undefined || body.permissions === null ? null : JSON.stringify(body.permissions);
  const { id, key } = await tx(deps.store, async (db) => {
    const made = await insertApiKey(db, {
      userId: keyOwner(auth),
      teamId: auth.teamId,
      name,
      permissions: parsed.value ? JSON.stringify(parsed.value) : null,
      permissionsGiven: given,
      now,
    });
    await recordEvent(db, now, apiKeyEvent(auth.user.id, made.id, 'api_key.created', name));
    return made;
  });
  return { success: true, ...view(await findKeyById(deps.db, id)), key };
}

export async function listApiKeys(deps: Deps, auth: AuthContext): Promise<ApiKeyView[]> {
  return (await listLiveKeys(deps.db, keyOwner(auth))).map(view);
}

export async function getApiKey(deps: Deps, auth: AuthContext, id: number): Promise<ApiKeyView> {
  const row = await findLiveKey(deps.db, keyOwner(auth), id);
  if (!row) throw CommonErrors.notFound('No such API key');
  return view(row);
}

/**
 * Revokes at once: authentication reads the row on every request, so the next one fails. The
 * sessions the key's 2FA logins made end in the same transaction. As with creation, a key cannot
 * revoke a key with permissions it does not hold: a key scoped to API keys cannot lock the
 * account's full key out.
 */
export async function revokeApiKey(deps: Deps, auth: AuthContext, id: number): Promise<void> {
  const now = deps.clock.now();
  await tx(deps.store, async (db) => {
    const target = await findLiveKey(db, keyOwner(auth), id);
    if (!target) throw CommonErrors.notFound('No such API key');
    const held = target.permissions ? (JSON.parse(target.permissions) as Permissions) : null;
    if (!isSubset(held, auth.permissions))
      throw new AppError(403, 'forbidden', 'A key cannot revoke a key with permissions it does not hold');
    if ((await revokeLiveKey(db, keyOwner(auth), id, now)) === 0)
      throw CommonErrors.notFound('No such API key');
    await revokeKeySessions(db, id, now);
    await recordEvent(db, now, apiKeyEvent(auth.user.id, id, 'api_key.revoked'));
  });
}
