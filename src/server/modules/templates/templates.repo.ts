// Every SQL statement of the templates module. Who may touch a row is part of each statement:
// an update or delete is a conditional UPDATE on the owner and the hash (or id) it names, so of
// two racing updates of one version exactly one applies; hash_id is unique (a database index).
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { TemplatesTable } from '../../db/tables/templates.js';
import { whereFilters, type SelectFilter } from '../../db/filters.js';

export type TemplateRow = Selectable<TemplatesTable>;

export async function insertTemplate(
  db: Kysely<DB>,
  values: Insertable<TemplatesTable>,
): Promise<TemplateRow> {
  return db.insertInto('templates').values(values).returningAll().executeTakeFirstOrThrow();
}

/**
 * A live (not deleted) template of version `hashId`: the user's own, or, when `publicToo`,
 * also anyone's public one (what a user may create an instance from).
 */
export function liveTemplate(
  db: Kysely<DB>,
  userId: number,
  hashId: string,
  publicToo: boolean,
): Promise<TemplateRow | undefined> {
  return db
    .selectFrom('templates')
    .selectAll()
    .where('hash_id', '=', hashId)
    .where('deleted_at', 'is', null)
    .where((eb) =>
      publicToo ? eb.or([eb('user_id', '=', userId), eb('private', '=', 0)]) : eb('user_id', '=', userId),
    )
    .executeTakeFirst();
}

/** A live template by its id (the same across updates): the user's own or anyone's public one. */
export function liveUsableTemplateById(
  db: Kysely<DB>,
  userId: number,
  id: number,
): Promise<TemplateRow | undefined> {
  return db
    .selectFrom('templates')
    .selectAll()
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where((eb) => eb.or([eb('user_id', '=', userId), eb('private', '=', 0)]))
    .executeTakeFirst();
}

/** Replaces the owner's template of version `hashId`; undefined when no such row (any more). */
export function updateOwnTemplate(
  db: Kysely<DB>,
  userId: number,
  hashId: string,
  values: Updateable<TemplatesTable>,
): Promise<TemplateRow | undefined> {
  return db
    .updateTable('templates')
    .set(values)
    .where('hash_id', '=', hashId)
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Marks the owner's template deleted; its id, or undefined when it is not theirs or gone. */
export async function deleteOwnTemplate(
  db: Kysely<DB>,
  userId: number,
  by: { hashId: string } | { id: number },
  now: number,
): Promise<number | undefined> {
  let q = db
    .updateTable('templates')
    .set({ deleted_at: now, updated_at: now })
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null);
  q = 'hashId' in by ? q.where('hash_id', '=', by.hashId) : q.where('id', '=', by.id);
  const r = await q.returning('id').executeTakeFirst();
  return r?.id;
}

/** The live templates the user may see that pass the filters, newest first. */
export function searchTemplateRows(
  db: Kysely<DB>,
  userId: number,
  filters: SelectFilter[],
  limit: number,
): Promise<TemplateRow[]> {
  const base = db
    .selectFrom('templates as t')
    .selectAll('t')
    .where('t.deleted_at', 'is', null)
    .where((eb) => eb.or([eb('t.user_id', '=', userId), eb('t.private', '=', 0)]));
  return whereFilters(base, filters)
    .orderBy('t.created_at', 'desc')
    .orderBy('t.id', 'desc')
    .limit(limit)
    .execute();
}
