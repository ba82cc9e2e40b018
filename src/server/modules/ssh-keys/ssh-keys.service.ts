// SSH keys of an account. A key must be registered before renting, so that the instance starts
// with it; the agent installs them per instance.
import type { Deps } from '../../deps.js';
import type { AuthContext } from '../../http/auth.js';
import { CommonErrors } from '../../errors.js';
import { parseSshPublicKey } from './ssh-keys.parse.js';

export interface SshKeyView {
  id: number;
  ssh_key: string;
  public_key: string;
  key_type: string;
  fingerprint: string;
  comment: string;
  created_at: number;
}

type Row = {
  id: number;
  public_key: string;
  key_type: string;
  fingerprint: string;
  comment: string;
  created_at: number;
};

export function sshKeyView(r: Row): SshKeyView {
  return {
    id: r.id,
    ssh_key: r.public_key,
    public_key: r.public_key,
    key_type: r.key_type,
    fingerprint: r.fingerprint,
    comment: r.comment,
    created_at: r.created_at / 1000,
  };
}

function parseOrThrow(raw: unknown) {
  const p = parseSshPublicKey(raw);
  if (!p.ok) throw CommonErrors.badRequest(p.msg);
  return p.key;
}

export async function addSshKey(deps: Deps, auth: AuthContext, raw: unknown): Promise<SshKeyView> {
  const key = parseOrThrow(raw);
  const existing = await deps.db
    .selectFrom('ssh_keys')
    .selectAll()
    .where('user_id', '=', auth.user.id)
    .where('fingerprint', '=', key.fingerprint)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  // Adding a key you already have is harmless: the same record comes back.
  if (existing) return sshKeyView(existing);
  const row = await deps.db
    .insertInto('ssh_keys')
    .values({
      user_id: auth.user.id,
      public_key: key.publicKey,
      key_type: key.type,
      fingerprint: key.fingerprint,
      comment: key.comment,
      created_at: deps.clock.now(),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return sshKeyView(row);
}

export async function listSshKeys(deps: Deps, userId: number): Promise<SshKeyView[]> {
  const rows = await deps.db
    .selectFrom('ssh_keys')
    .selectAll()
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
  return rows.map(sshKeyView);
}

export async function replaceSshKey(
  deps: Deps,
  auth: AuthContext,
  id: number,
  raw: unknown,
): Promise<SshKeyView> {
  const key = parseOrThrow(raw);
  const row = await deps.db
    .updateTable('ssh_keys')
    .set({
      public_key: key.publicKey,
      key_type: key.type,
      fingerprint: key.fingerprint,
      comment: key.comment,
    })
    .where('id', '=', id)
    .where('user_id', '=', auth.user.id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw CommonErrors.notFound('No such SSH key');
  return sshKeyView(row);
}

export async function deleteSshKey(deps: Deps, auth: AuthContext, id: number): Promise<void> {
  const res = await deps.db
    .updateTable('ssh_keys')
    .set({ deleted_at: deps.clock.now() })
    .where('id', '=', id)
    .where('user_id', '=', auth.user.id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) throw CommonErrors.notFound('No such SSH key');
}
