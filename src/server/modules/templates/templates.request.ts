// Validation of a template body (create and update; docs/templates.md). Pure. A template is
// checked with the instance-creation validators themselves: the instance body it would produce
// (image:tag, env, onstart, runtype, disk) must pass parseCreateBody, so a template never holds
// what a create could not take. extra_filters must be an offer search that POST /bundles/ takes.
import { AppError } from '../../errors.js';
import { assertPlainText } from '../../http/plain-text.js';
import { compileSearch } from '../offers/offers.filter.js';
import { parseCreateBody, parseDiskGb, parseRuntype } from '../instance-config/instance-config.parse.js';
import { TemplateErrors } from './templates.errors.js';
import { dockerOptionsEnv, shellWords } from '../../../contract/docker-options.js';
import { TEMPLATE_LIMITS } from '../../../contract/schemas/templates.js';

/** Character limits of the template fields. */
export { TEMPLATE_LIMITS };

/** A template as stored (flags as booleans; extra_filters parsed). */
export interface TemplateInput {
  name: string;
  image: string;
  tag: string | null;
  env: string;
  onstart: string;
  runtype: string;
  use_ssh: boolean;
  ssh_direct: boolean;
  jup_direct: boolean;
  use_jupyter_lab: boolean;
  jupyter_dir: string | null;
  docker_login_repo: string | null;
  href: string | null;
  repo: string | null;
  readme: string | null;
  readme_visible: boolean;
  desc: string | null;
  extra_filters: Record<string, unknown>;
  recommended_disk_space: number | null;
  private: boolean;
}

const bad = (msg: string) => TemplateErrors.badRequest(msg);

/** The instance-creation error of a template's value, its message naming the template field. */
function asTemplateError(err: unknown, field: string): unknown {
  if (!(err instanceof AppError) || err.status !== 400) return err;
  return bad(err.message.startsWith(field) ? err.message : `${field}: ${err.message}`);
}

function optString(b: Record<string, unknown>, k: keyof typeof TEMPLATE_LIMITS, plain = true): string | null {
  const v = b[k];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw bad(`${k} must be a string`);
  if (v.length > TEMPLATE_LIMITS[k]) throw bad(`${k} must be at most ${TEMPLATE_LIMITS[k]} characters`);
  if (plain) assertPlainText(k, v);
  return v;
}

function flag(b: Record<string, unknown>, k: string, dflt: boolean): boolean {
  const v = b[k];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw bad(`${k} must be true or false`);
  return v;
}

/**
 * A template's env string (docker options, as the official CLI sends its --env) as the create
 * body's env object; an option other than -e and -p is a 400 naming it.
 */
export function templateEnv(s: string): Record<string, string> {
  const r = dockerOptionsEnv(shellWords(s));
  if ('error' in r) throw bad(`env: ${r.error}`);
  return r.env;
}

/** The image reference a template launches: image, and `:tag` when it has one. */
export function templateImage(t: { image: string; tag: string | null }): string {
  return t.tag ? `${t.image}:${t.tag}` : t.image;
}

/** recommended_disk_space: a number, or the numeric text the official CLI sends; null for none. */
function diskSpace(v: unknown): number | null {
  if (v === undefined || v === null || v === '') return null;
  const n = typeof v === 'string' && /^\s*[0-9.eE+-]+\s*$/.test(v) ? Number(v) : v;
  return parseDiskGb('recommended_disk_space', n);
}

function extraFilters(v: unknown): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v))
    throw bad('extra_filters must be an object of offer search filters, e.g. {"num_gpus": {"gte": 1}}');
  if (JSON.stringify(v).length > TEMPLATE_LIMITS.extra_filters)
    throw bad(`extra_filters must be at most ${TEMPLATE_LIMITS.extra_filters} characters as JSON`);
  try {
    compileSearch(v);
  } catch (err) {
    throw asTemplateError(err, 'extra_filters');
  }
  return v as Record<string, unknown>;
}

/** A create or update body, checked; a 400 naming the first bad field otherwise. */
export function parseTemplateBody(body: unknown): TemplateInput {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body))
    throw bad('The body must be a JSON object with at least name and image');
  const b = body as Record<string, unknown>;
  const name = optString(b, 'name');
  if (name === null || name.trim() === '') throw bad('name is required: the name of the template');
  const image = optString(b, 'image');
  if (image === null || image.trim() === '')
    throw bad('image is required: a container image such as "pytorch/pytorch"');
  const tag = optString(b, 'tag');
  if (tag !== null && /[\s:@/]/.test(tag))
    throw bad('tag must be one image tag (no spaces, ":", "@" or "/")');
  const env = optString(b, 'env', false) ?? '';
  const onstart = b.onstart === undefined || b.onstart === null ? '' : b.onstart;
  if (typeof onstart !== 'string') throw bad('onstart must be a string');
  let runtype: string;
  try {
    runtype = parseRuntype(b.runtype);
  } catch (err) {
    throw asTemplateError(err, 'runtype');
  }
  const t: TemplateInput = {
    name: name.trim(),
    image: image.trim(),
    tag: tag === null || tag === '' ? null : tag,
    env,
    onstart,
    runtype,
    use_ssh: flag(b, 'use_ssh', false),
    ssh_direct: flag(b, 'ssh_direct', false),
    jup_direct: flag(b, 'jup_direct', false),
    use_jupyter_lab: flag(b, 'use_jupyter_lab', false),
    jupyter_dir: optString(b, 'jupyter_dir'),
    docker_login_repo: optString(b, 'docker_login_repo'),
    href: optString(b, 'href'),
    repo: optString(b, 'repo'),
    readme: optString(b, 'readme', false),
    readme_visible: flag(b, 'readme_visible', true),
    desc: optString(b, 'desc', false),
    extra_filters: extraFilters(b.extra_filters),
    recommended_disk_space: diskSpace(b.recommended_disk_space),
    private: flag(b, 'private', true),
  };
  // What an instance created from it alone would be given must pass create's own checks.
  const envObject = templateEnv(env);
  for (const [field, part] of [
    ['image', { image: templateImage(t) }],
    ['env', { image: 'x', env: envObject }],
    ['onstart', { image: 'x', onstart }],
  ] as const) {
    try {
      parseCreateBody(part);
    } catch (err) {
      throw asTemplateError(err, field);
    }
  }
  return t;
}
