// Templates: saved instance configurations (docs/templates.md). A user sees and rents from their
// own templates and everyone's public ones; only the owner changes or deletes one. hash_id names
// one version: an update gives the template a new hash_id (its id stays), so a hash always means
// the same configuration, and instances made from it and creates retried with it stay exact.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import type { DB } from '../../db/schema.js';
import type { TemplatesTable } from '../../db/tables/templates.js';
import { parseJsonParam, selectFilters, type FilterSpec } from '../../http/select-filters.js';
import { quoteValue } from '../../errors.js';
import { textOf } from '../../../contract/text.js';
import { TemplateErrors } from './templates.errors.js';
import {
  templateEnv,
  parseTemplateBody,
  TEMPLATE_LIMITS,
  templateImage,
  type TemplateInput,
} from './templates.request.js';
import * as repo from './templates.repo.js';
import { templateView, type TemplateView } from './templates.view.js';

export type { TemplateRow } from './templates.repo.js';

export const SEARCH_DEFAULT_LIMIT = 100;
export const SEARCH_MAX_LIMIT = 1000;

const bad = TemplateErrors.badRequest;

/** A new version name: 128 random bits as 32 hex digits (the form the official CLI shows). */
function newHashId(): string {
  return randomBytes(16).toString('hex');
}

function columns(
  t: TemplateInput,
): Omit<TemplatesTable, 'id' | 'hash_id' | 'user_id' | 'created_at' | 'updated_at' | 'deleted_at'> {
  return {
    name: t.name,
    image: t.image,
    tag: t.tag,
    env: t.env,
    onstart: t.onstart,
    runtype: t.runtype,
    use_ssh: t.use_ssh ? 1 : 0,
    ssh_direct: t.ssh_direct ? 1 : 0,
    jup_direct: t.jup_direct ? 1 : 0,
    use_jupyter_lab: t.use_jupyter_lab ? 1 : 0,
    jupyter_dir: t.jupyter_dir,
    docker_login_repo: t.docker_login_repo,
    href: t.href,
    repo: t.repo,
    readme: t.readme,
    readme_visible: t.readme_visible ? 1 : 0,
    description: t.desc,
    extra_filters: JSON.stringify(t.extra_filters),
    recommended_disk_space: t.recommended_disk_space,
    private: t.private ? 1 : 0,
  };
}

export async function createTemplate(deps: Deps, auth: AuthContext, body: unknown): Promise<TemplateView> {
  const t = parseTemplateBody(body);
  const now = deps.clock.now();
  const row = await repo.insertTemplate(deps.db, {
    ...columns(t),
    hash_id: newHashId(),
    user_id: auth.user.id,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  });
  return templateView(row);
}

function hashIdOf(b: Record<string, unknown>): string {
  const h = b.hash_id;
  if (typeof h !== 'string' || h === '' || h.length > TEMPLATE_LIMITS.hash_id)
    throw bad('hash_id is required: the hash_id of the template (search templates shows it)');
  return h;
}

/**
 * Replaces the caller's template named by `hash_id` with the body; a field absent or null keeps
 * its stored value (the official CLI sends null for every option not given). The reply is the
 * template with its new hash_id.
 */
export async function updateTemplate(deps: Deps, auth: AuthContext, body: unknown): Promise<TemplateView> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body))
    throw bad('The body must be a JSON object with hash_id and the fields to change');
  const b = body as Record<string, unknown>;
  const hashId = hashIdOf(b);
  const current = await repo.liveTemplate(deps.db, auth.user.id, hashId, false);
  if (!current) throw notYours(hashId);
  const merged: Record<string, unknown> = { ...templateView(current) };
  for (const [k, v] of Object.entries(b)) if (v !== null && v !== undefined) merged[k] = v;
  const t = parseTemplateBody(merged);
  const now = deps.clock.now();
  // Conditional on the version read: a concurrent update or delete of it makes this one a 404.
  const row = await repo.updateOwnTemplate(deps.db, auth.user.id, hashId, {
    ...columns(t),
    hash_id: newHashId(),
    updated_at: now,
  });
  if (!row) throw notYours(hashId);
  return templateView(row);
}

const notYours = (hashId: string) =>
  TemplateErrors.notFound(
    `No template of yours has hash_id ${quoteValue(hashId)} (an update gives a template a new hash_id)`,
  );

/** Deletes the caller's template named by `hash_id` or `template_id`. */
export async function deleteTemplate(deps: Deps, auth: AuthContext, body: unknown): Promise<string> {
  const b = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<
    string,
    unknown
  >;
  const now = deps.clock.now();
  if (b.hash_id !== undefined && b.hash_id !== null) {
    const hashId = hashIdOf(b);
    const id = await repo.deleteOwnTemplate(deps.db, auth.user.id, { hashId }, now);
    if (id === undefined) throw notYours(hashId);
    return `Template ${id} deleted`;
  }
  const raw = b.template_id;
  const id = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (raw === undefined || raw === null) throw bad('Give hash_id or template_id: the template to delete');
  if (!Number.isSafeInteger(id) || id < 1)
    throw bad(`template_id must be a positive integer, not ${quoteValue(raw)}`);
  const done = await repo.deleteOwnTemplate(deps.db, auth.user.id, { id }, now);
  if (done === undefined) throw TemplateErrors.notFound(`No template of yours has id ${id}`);
  return `Template ${id} deleted`;
}

// ---- search ---------------------------------------------------------------------------------

type Kind = 'int' | 'real' | 'time' | 'string' | 'nstring' | 'bool';
const SEARCH_FIELDS: Record<string, { col: string; kind: Kind }> = {
  id: { col: 't.id', kind: 'int' },
  hash_id: { col: 't.hash_id', kind: 'string' },
  creator_id: { col: 't.user_id', kind: 'int' },
  name: { col: 't.name', kind: 'string' },
  image: { col: 't.image', kind: 'string' },
  tag: { col: 't.tag', kind: 'nstring' },
  runtype: { col: 't.runtype', kind: 'string' },
  docker_login_repo: { col: 't.docker_login_repo', kind: 'nstring' },
  private: { col: 't.private', kind: 'bool' },
  use_ssh: { col: 't.use_ssh', kind: 'bool' },
  ssh_direct: { col: 't.ssh_direct', kind: 'bool' },
  jup_direct: { col: 't.jup_direct', kind: 'bool' },
  recommended_disk_space: { col: 't.recommended_disk_space', kind: 'real' },
  created_at: { col: 't.created_at', kind: 'time' },
  updated_at: { col: 't.updated_at', kind: 'time' },
};

function coerce(field: string, kind: Kind, v: unknown): string | number | null {
  if (v === null && (kind === 'nstring' || kind === 'real')) return null;
  if (kind === 'bool') {
    if (v === true || v === 1 || v === 'true' || v === 'True' || v === '1') return 1;
    if (v === false || v === 0 || v === 'false' || v === 'False' || v === '0') return 0;
    throw bad(`select_filters: ${field} takes true or false, not ${quoteValue(v)}`);
  }
  if (kind === 'string' || kind === 'nstring') {
    if (typeof v === 'number') return String(v);
    if (typeof v !== 'string') throw bad(`select_filters: ${field} takes strings, not ${quoteValue(v)}`);
    return v;
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (kind === 'int' && !Number.isSafeInteger(n))
    throw bad(`select_filters: ${field} takes integers, not ${quoteValue(v)}`);
  if (!Number.isFinite(n)) throw bad(`select_filters: ${field} takes numbers, not ${quoteValue(v)}`);
  // Times are given in epoch seconds and stored in ms.
  return kind === 'time' ? Math.round(n * 1000) : n;
}

const FILTERS: FilterSpec<Kind> = {
  fields: SEARCH_FIELDS,
  coerce,
  ordered: (kind) => kind === 'int' || kind === 'real' || kind === 'time',
  bad,
};

export interface SearchQuery {
  select_filters?: unknown;
  select_cols?: unknown;
  limit?: unknown;
}

/**
 * The caller's templates and everyone's public ones (never another user's private one) that
 * pass select_filters, newest first, at most `limit` (default 100, at most 1000). select_cols is
 * accepted and every field is returned.
 */
export async function searchTemplates(
  deps: Deps,
  auth: AuthContext,
  q: SearchQuery,
): Promise<TemplateView[]> {
  const filters = selectFilters(parseJsonParam('select_filters', q.select_filters, bad), FILTERS);
  let limit = SEARCH_DEFAULT_LIMIT;
  if (q.limit !== undefined && q.limit !== '') {
    limit = /^\d+$/.test(textOf(q.limit)) ? Number(q.limit) : NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_MAX_LIMIT)
      throw bad(`limit must be an integer from 1 to ${SEARCH_MAX_LIMIT}`);
  }
  const rows = await repo.searchTemplateRows(deps.db, auth.user.id, filters, limit);
  return rows.map(templateView);
}

/** The template an instance is created from: the user's own or a public one, live; else 404. */
export async function usableTemplate(
  db: Kysely<DB>,
  userId: number,
  hashId: unknown,
): Promise<repo.TemplateRow> {
  if (typeof hashId !== 'string' || hashId === '' || hashId.length > TEMPLATE_LIMITS.hash_id)
    throw bad('template_hash_id must be the hash_id of a template (search templates shows it)');
  const row = await repo.liveTemplate(db, userId, hashId, true);
  if (!row)
    throw TemplateErrors.notFound(
      `No template with hash_id ${quoteValue(hashId)} that you may use: it is unknown, deleted, updated (an update gives a new hash_id) or another user's private template`,
    );
  return row;
}

/**
 * The template named by `template_id` (its id, which an update keeps, so it means the template's
 * current version): the user's own or a public one, live; else 404.
 */
export async function usableTemplateById(
  db: Kysely<DB>,
  userId: number,
  raw: unknown,
): Promise<repo.TemplateRow> {
  const id =
    typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id < 1)
    throw bad(`template_id must be a positive integer, not ${quoteValue(raw)}`);
  const row = await repo.liveUsableTemplateById(db, userId, id);
  if (!row)
    throw TemplateErrors.notFound(
      `No template with id ${id} that you may use: it is unknown, deleted or another user's private template`,
    );
  return row;
}

const given = (v: unknown): boolean => v !== undefined && v !== null;

/**
 * A create-instance body with the template's settings where the body gives none: image (with
 * its tag), onstart, runtype, and disk from recommended_disk_space; env is the template's with
 * the body's variables on top. The result is then checked as any create body is.
 */
export function instanceBodyFrom(
  t: repo.TemplateRow,
  body: Record<string, unknown>,
): Record<string, unknown> {
  const bodyEnv = body.env;
  const env =
    bodyEnv === undefined || bodyEnv === null
      ? templateEnv(t.env)
      : typeof bodyEnv === 'object' && !Array.isArray(bodyEnv)
        ? { ...templateEnv(t.env), ...(bodyEnv as Record<string, unknown>) }
        : bodyEnv;
  return {
    ...body,
    image: given(body.image) && body.image !== '' ? body.image : templateImage(t),
    env,
    onstart: given(body.onstart) ? body.onstart : t.onstart,
    runtype: given(body.runtype) ? body.runtype : t.runtype,
    disk: given(body.disk) ? body.disk : t.recommended_disk_space,
  };
}
