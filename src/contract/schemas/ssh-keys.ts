// The account's SSH public keys: register, list, replace, delete.
import { authErrors, errorSchema, idParams } from './common.js';

const tags = ['ssh keys'] as const;

export const sshKeySchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    ssh_key: { type: 'string' },
    public_key: { type: 'string' },
    key_type: { type: 'string' },
    fingerprint: { type: 'string' },
    comment: { type: 'string' },
    created_at: { type: 'number' },
  },
} as const;

/**
 * An OpenSSH public key line: its type (ed25519, ecdsa, or rsa, which must have at least 2048 bits),
 * its base64 key and an optional comment; one line (surrounding white space is ignored).
 */
export const sshPublicKey = {
  type: 'string',
  maxLength: 16384,
  pattern:
    '^\\s*(?:ssh-ed25519|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|ssh-rsa) [A-Za-z0-9+/]+={0,3}(?: [^\\r\\n]*)?\\s*$',
  description:
    'An OpenSSH public key line (ed25519, ecdsa, or rsa of at least 2048 bits), e.g. ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop',
} as const;

export const sshKeyBody = {
  type: 'object',
  required: ['ssh_key'],
  properties: { ssh_key: sshPublicKey },
} as const;

/** The key registered or replaced: under `key`, and its fields again at the top level. */
export const sshKeyReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, key: sshKeySchema, ...sshKeySchema.properties },
} as const;

export const sshKeysList = {
  type: 'object',
  properties: { success: { type: 'boolean' }, ssh_keys: { type: 'array', items: sshKeySchema } },
} as const;

export const addSshKey = {
  method: 'POST',
  url: '/api/v0/ssh',
  schema: {
    tags,
    summary: 'Register an OpenSSH public key',
    body: sshKeyBody,
    response: { 200: sshKeyReply, ...authErrors },
  },
} as const;

export const listSshKeys = {
  method: 'GET',
  url: '/api/v0/ssh',
  schema: { tags, response: { 200: sshKeysList, 401: errorSchema, 403: errorSchema } },
} as const;

export const replaceSshKey = {
  method: 'PUT',
  url: '/api/v0/ssh/:id',
  schema: { tags, params: idParams, body: sshKeyBody, response: { 200: sshKeyReply, ...authErrors } },
} as const;

export const deleteSshKey = {
  method: 'DELETE',
  url: '/api/v0/ssh/:id',
  schema: {
    tags,
    params: idParams,
    response: {
      200: { type: 'object', properties: { success: { type: 'boolean' }, msg: { type: 'string' } } },
      ...authErrors,
    },
  },
} as const;
