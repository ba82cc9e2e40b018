// SSH keys of an account. A key must be registered before renting: an instance starts with the
// account's keys of that moment. Later, keys are given to one instance at a time (attach, in the
// instances module), never to the whole account; deleting an account key takes it off every
// instance. The agent installs each instance's keys.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { CommonErrors } from '../../errors.js';
import { parseSshPublicKey, type ParsedSshKey } from './ssh-keys.parse.js';
import {
  deleteAccountKey,
  findAccountKey,
  insertSshKey,
  listAccountKeys,
  replaceAccountKey,
} from './ssh-keys.repo.js';

// An instance's own keys, written with the instance by the instances module.
export { deleteInstanceOnlyKey, findAccountKey, findInstanceOnlyKey, insertSshKey } from './ssh-keys.repo.js';

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

export function parseOrThrow(raw: unknown): ParsedSshKey {
  const p = parseSshPublicKey(raw);
  if (!p.ok) throw CommonErrors.badRequest(p.msg);
  return p.key;
}

export async function addSshKey(deps: Deps, auth: AuthContext, raw: unknown): Promise<SshKeyView> {
  const key = parseOrThrow(raw);
  const existing = await findAccountKey(deps.db, auth.user.id, key.fingerprint);
  // Adding a key you already have is harmless: the same record comes back.
  if (existing) return sshKeyView(existing);
  const row = await insertSshKey(deps.db, {
    user_id: auth.user.id,
    public_key: key.publicKey,
    key_type: key.type,
    fingerprint: key.fingerprint,
    comment: key.comment,
    created_at: deps.clock.now(),
    instance_id: null,
  });
  return sshKeyView(row);
}

export async function listSshKeys(deps: Deps, userId: number): Promise<SshKeyView[]> {
  return (await listAccountKeys(deps.db, userId)).map(sshKeyView);
}

export async function replaceSshKey(
  deps: Deps,
  auth: AuthContext,
  id: number,
  raw: unknown,
): Promise<SshKeyView> {
  const key = parseOrThrow(raw);
  const row = await replaceAccountKey(deps.db, auth.user.id, id, {
    public_key: key.publicKey,
    key_type: key.type,
    fingerprint: key.fingerprint,
    comment: key.comment,
  });
  if (!row) throw CommonErrors.notFound('No such SSH key');
  return sshKeyView(row);
}

export async function deleteSshKey(deps: Deps, auth: AuthContext, id: number): Promise<void> {
  if (!(await deleteAccountKey(deps.db, auth.user.id, id, deps.clock.now())))
    throw CommonErrors.notFound('No such SSH key');
}
