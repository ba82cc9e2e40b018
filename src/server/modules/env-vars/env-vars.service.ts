// Account environment variables (docs/env-vars.md): an account's NAME=value pairs that every
// instance it creates afterwards gets in its environment, under the instance's own env. Values
// are encrypted at rest (AES-256-GCM with the server's secret key, as TOTP secrets are) and never
// written to a log or an error message; only the owner reads them back (GET /secrets/).
//
// When they are read: once, in the transaction that creates an instance (snapshotForInstance),
// so a create is one consistent configuration. The instance keeps that copy for its life (stop,
// start, reboot, recycle); a change to the account's variables applies to instances created
// after it.
import type { Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { DB } from '../../db/schema.js';
import type { AuthContext } from '../../identity.js';
import { isUniqueViolation, tx } from '../../db/connection.js';
import { decryptSecret, encryptSecret } from '../../crypto.js';
import { EnvVarErrors } from './env-vars.errors.js';
import { ENV_VAR_LIMITS, nameProblem, valueProblem } from '../../../contract/env-var-rules.js';
import * as repo from './env-vars.repo.js';

const bad = EnvVarErrors.badRequest;

function bodyOf(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw bad('The body must be a JSON object: {"key": NAME, "value": VALUE}');
  return body as Record<string, unknown>;
}

function nameOf(b: Record<string, unknown>): string {
  const k = b.key;
  if (typeof k !== 'string') throw bad('key is required: the variable name, a string');
  const why = nameProblem(k);
  if (why) throw bad(why);
  return k;
}

function valueOf(b: Record<string, unknown>): string {
  const v = b.value;
  if (typeof v !== 'string') throw bad('value is required: a string');
  const why = valueProblem(v);
  if (why) throw bad(why);
  return v;
}

/** The value of a row, or an internal error naming the variable (never its value). */
function open(key: Buffer, userId: number, row: { name: string; value_enc: string }): string {
  const v = decryptSecret(key, row.value_enc);
  if (v === null)
    throw new Error(
      `environment variable ${row.name} of user ${userId} cannot be decrypted (was OPENRIG_SECRET_KEY changed?)`,
    );
  return v;
}

/** Every variable of the caller with its value, by name. */
export async function listEnvVars(deps: Deps, auth: AuthContext): Promise<Record<string, string>> {
  const rows = await repo.envVarsOf(deps.db, auth.user.id);
  const out: Record<string, string> = {};
  for (const r of rows) out[r.name] = open(deps.config.secretKey, auth.user.id, r);
  return out;
}

const notFound = (name: string) => EnvVarErrors.notFound(`You have no environment variable named ${name}`);
const exists = (name: string) =>
  EnvVarErrors.exists(
    `An environment variable named ${name} already exists: change its value with update env-var`,
  );

/**
 * Adds a variable. The account's creates are serialised (an advisory lock on PostgreSQL; SQLite
 * writers are serial) so the count can't pass the limit; a second variable of one name is
 * refused by the unique index, whichever create commits first.
 */
export async function createEnvVar(deps: Deps, auth: AuthContext, body: unknown): Promise<string> {
  const b = bodyOf(body);
  const name = nameOf(b);
  const value = valueOf(b);
  const userId = auth.user.id;
  const now = deps.clock.now();
  const valueEnc = encryptSecret(deps.config.secretKey, value);
  try {
    await tx(deps.store, async (db) => {
      await repo.lockAccount(db, deps.store.dialect, userId);
      if ((await repo.countOf(db, userId)) >= ENV_VAR_LIMITS.perAccount) {
        if (await repo.exists(db, userId, name)) throw exists(name);
        throw bad(
          `At most ${ENV_VAR_LIMITS.perAccount} environment variables per account: delete one (delete env-var) first`,
        );
      }
      await repo.insertEnvVar(db, {
        user_id: userId,
        name,
        value_enc: valueEnc,
        created_at: now,
        updated_at: now,
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw exists(name);
    throw err;
  }
  return `Environment variable ${name} created`;
}

/** Replaces the value of one of the caller's variables; 404 when there is none of that name. */
export async function updateEnvVar(deps: Deps, auth: AuthContext, body: unknown): Promise<string> {
  const b = bodyOf(body);
  const name = nameOf(b);
  const value = valueOf(b);
  const valueEnc = encryptSecret(deps.config.secretKey, value);
  if (!(await repo.updateEnvVar(deps.db, auth.user.id, name, valueEnc, deps.clock.now())))
    throw notFound(name);
  return `Environment variable ${name} updated`;
}

/** Deletes one of the caller's variables; 404 when there is none of that name. */
export async function deleteEnvVar(deps: Deps, auth: AuthContext, body: unknown): Promise<string> {
  const name = nameOf(bodyOf(body));
  if (!(await repo.deleteEnvVar(deps.db, auth.user.id, name))) throw notFound(name);
  return `Environment variable ${name} deleted`;
}

// ---- instances ------------------------------------------------------------------------------

/**
 * Copies the account's variables to a new instance, in the create's transaction `db`: one
 * encrypted JSON object {NAME: value}. Nothing is written when the account has none.
 */
export async function snapshotForInstance(
  db: Kysely<DB>,
  secretKey: Buffer,
  userId: number,
  instanceId: number,
): Promise<void> {
  const rows = await repo.envVarsOf(db, userId);
  if (rows.length === 0) return;
  const env: Record<string, string> = {};
  for (const r of rows) env[r.name] = open(secretKey, userId, r);
  await repo.insertInstanceEnv(db, instanceId, encryptSecret(secretKey, JSON.stringify(env)));
}

/** The account variables of an instance's launch spec, from its copy (null: none). */
export function launchAccountEnv(
  secretKey: Buffer,
  instanceId: number,
  envEnc: string | null,
): Record<string, string> {
  if (envEnc === null) return {};
  const plain = decryptSecret(secretKey, envEnc);
  if (plain === null)
    throw new Error(
      `the account environment of instance ${instanceId} cannot be decrypted (was OPENRIG_SECRET_KEY changed?)`,
    );
  return JSON.parse(plain) as Record<string, string>;
}

/** Forgets a destroyed instance's copy of the account's variables (in the destroy's transaction). */
export function dropInstanceEnv(db: Kysely<DB>, instanceId: number): Promise<void> {
  return repo.deleteInstanceEnv(db, instanceId);
}
