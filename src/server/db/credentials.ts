// The credential lookups every authenticated request makes, built once (prepared.ts): a session
// by its token's hash, an API key by its hash, and an API key with a route's own first read for
// its user (JoinedRead). Where that fused read is one statement (PostgreSQL) or one read
// transaction of a SQLite file is decided here, in db/, the one layer that knows which database
// runs; the auth hook calls keyWithRead and never looks at the dialect.
import { sql, type Compilable, type Kysely, type RawBuilder } from 'kysely';
import type { Store } from './connection.js';
import type { SqlDialect } from './dialect.js';
import { preparedRead, type PreparedRead } from './prepared.js';
import type { DB } from './schema.js';

/** A route's read of one row for the user `userId` (an SQL reference to the key's user id). */
export interface JoinedRead {
  build(
    on: { db: Kysely<DB>; dialect: SqlDialect },
    userId: RawBuilder<number>,
    ...args: unknown[]
  ): Compilable<unknown>;
}

/** A session by its token's hash, with the revocation of the API key that made it. */
export const sessionByHash = preparedRead(
  ({ db }, hash: string) =>
    db
      .selectFrom('sessions as s')
      .innerJoin('users as u', 'u.id', 's.user_id')
      .leftJoin('api_keys as k', 'k.id', 's.api_key_id')
      .selectAll('u')
      .select([
        's.id as sid',
        's.team_id as s_team',
        's.expires_at',
        's.revoked_at',
        's.is_admin as s_admin',
        's.kind as s_kind',
        's.api_key_id as s_key',
        's.permissions as s_perms',
        'k.revoked_at as k_revoked',
      ])
      .where('s.token_hash', '=', hash),
  { coalesce: true },
);

/** The API key lookup: a key by its hash, joined with its user. */
function keyLookup(db: Kysely<DB>, hash: string) {
  return db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .selectAll('u')
    .select([
      'k.id as kid',
      'k.team_id as k_team',
      'k.kind as k_kind',
      'k.instance_id as k_instance',
      'k.permissions as k_perms',
      'k.revoked_at as k_revoked',
      'k.last_used_at as k_used',
    ])
    .where('k.key_hash', '=', hash);
}

export type KeyRow = Awaited<ReturnType<ReturnType<typeof keyLookup>['executeTakeFirstOrThrow']>>;

/** An API key by its hash, joined with its user (bench/ceiling.mjs makes this same read). */
export const apiKeyByHash = preparedRead(({ db }, hash: string) => keyLookup(db, hash), { coalesce: true });

/**
 * The key lookup with a route's read, in one PostgreSQL statement (row_to_json: PostgreSQL only):
 * the key's row as `key`, the route's row (or null) as `joined`, both exactly as their own
 * statements return them. Built once per JoinedRead (bench/ceiling.mjs reads the poll's so).
 */
type KeyWithRead = (
  store: Store,
  hash: string,
  ...args: unknown[]
) => Promise<{ key: KeyRow; joined: unknown }[]>;
const keyJoinedReads = new WeakMap<JoinedRead, KeyWithRead>();
export function keyWithJoinedRead(j: JoinedRead): KeyWithRead {
  let read = keyJoinedReads.get(j);
  if (!read) {
    read = preparedRead(
      (on, hash: string, ...args: unknown[]) =>
        on.db
          .selectFrom(keyLookup(on.db, hash).as('a'))
          .select([
            sql<KeyRow>`a`.as('key'),
            sql<unknown>`(SELECT row_to_json(j) FROM (${j.build(on, sql.ref<number>('a.id'), ...args)}) j)`.as(
              'joined',
            ),
          ]),
      { coalesce: true },
    );
    keyJoinedReads.set(j, read);
  }
  return read;
}

/** A JoinedRead's read for a user id given as a value (SQLite), built once per JoinedRead. */
const forUserReads = new WeakMap<JoinedRead, PreparedRead<[number, ...unknown[]], unknown>>();
function keyJoinedForUser(j: JoinedRead): PreparedRead<[number, ...unknown[]], unknown> {
  let read = forUserReads.get(j);
  if (!read) {
    read = preparedRead((on, userId: number, ...args: unknown[]) =>
      j.build(on, sql<number>`${userId}`, ...args),
    );
    forUserReads.set(j, read);
  }
  return read;
}

/**
 * The API key by its hash and, when it is live, `read` for its user, in one read transaction of a
 * SQLite file (bench/ceiling.mjs reads the poll's so).
 */
export function keyWithReadInSnapshot(
  store: Store,
  snapshot: NonNullable<Store['readSnapshot']>,
  hash: string,
  read: JoinedRead,
  args: unknown[],
): Promise<{ key: KeyRow | undefined; joined: unknown }> {
  const key = apiKeyByHash.statement(store, [hash]);
  return snapshot((r) => {
    const [row] = r<KeyRow>(key.sql, key.params);
    if (!row || row.k_revoked !== null) return { key: row, joined: null };
    const own = keyJoinedForUser(read).statement(store, [row.id, ...args]);
    const [joined] = r<unknown>(own.sql, own.params);
    return { key: row, joined: joined ?? null };
  });
}

/**
 * Whether `store` reads a key and a route's read together (keyWithRead): on PostgreSQL in one
 * statement, on a SQLite file in one read transaction; an in-memory SQLite database does not.
 */
export function joinsKeyReads(store: Store): boolean {
  return store.dialect.name === 'postgres' || store.readSnapshot !== undefined;
}

/**
 * The API key by its hash with `read` for its user, together (only where joinsKeyReads): `key` is
 * the key's row (undefined when unknown), `joined` the route's row or null. The key is read
 * exactly as apiKeyByHash reads it.
 */
export function keyWithRead(
  store: Store,
  hash: string,
  read: JoinedRead,
  args: unknown[],
): Promise<{ key: KeyRow | undefined; joined: unknown }> {
  if (store.readSnapshot) return keyWithReadInSnapshot(store, store.readSnapshot, hash, read, args);
  return keyWithJoinedRead(read)(store, hash, ...args).then(([row]) => ({
    key: row?.key,
    joined: row ? row.joined : null,
  }));
}
