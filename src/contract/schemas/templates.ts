// The template calls of the official CLI: create, search, update and delete templates, all on
// /api/v0/template/. A template is an instance configuration; `hash_id` names one version of it.
import { authErrors, countText, jsonObjectText } from './common.js';
import { runtypeField } from './instances.js';
import { DOCKER_OPTIONS_PATTERN } from '../docker-options.js';

const tags = ['templates'] as const;

/** The longest text each template field takes. */
export const TEMPLATE_LIMITS = {
  name: 200,
  image: 500,
  tag: 128,
  env: 4096,
  href: 2048,
  repo: 2048,
  jupyter_dir: 1024,
  docker_login_repo: 500,
  readme: 16384,
  desc: 4096,
  hash_id: 64,
  /** extra_filters, as JSON text. */
  extra_filters: 16384,
} as const;

const L = TEMPLATE_LIMITS;

const str = { type: 'string' } as const;
const nstr = { type: ['string', 'null'] } as const;
const bool = { type: 'boolean' } as const;

export const templateSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    hash_id: { type: 'string', description: 'names this version of the template; an update gives a new one' },
    creator_id: { type: 'integer', description: "the owner's user id" },
    name: str,
    image: str,
    tag: nstr,
    env: { type: 'string', description: 'docker options: "-e NAME=VALUE -p 8080:8080"' },
    onstart: str,
    runtype: str,
    use_ssh: bool,
    ssh_direct: bool,
    jup_direct: bool,
    use_jupyter_lab: bool,
    jupyter_dir: nstr,
    docker_login_repo: nstr,
    href: nstr,
    repo: nstr,
    readme: nstr,
    readme_visible: bool,
    desc: nstr,
    extra_filters: {
      type: 'object',
      additionalProperties: true,
      description: 'an offer search (POST /bundles/)',
    },
    recommended_disk_space: { type: ['number', 'null'], description: 'GB' },
    private: bool,
    created_at: { type: 'number' },
    updated_at: { type: 'number' },
  },
} as const;

/** A text field or null, at most `maxLength` characters. */
const nstring = (maxLength: number, description?: string) =>
  ({
    type: ['string', 'null'],
    maxLength,
    ...(description ? { description } : {}),
  }) as {
    readonly type: readonly ['string', 'null'];
    readonly maxLength: number;
    readonly description?: string;
  };
const nbool = { type: ['boolean', 'null'] } as const;

/** The create and update body. Each field is checked further by parseTemplateBody (templates.request.ts). */
export const templateBody = {
  type: 'object',
  properties: {
    name: nstring(L.name),
    image: nstring(L.image, 'a container image without its tag, e.g. "pytorch/pytorch"'),
    tag: nstring(L.tag, 'appended as image:tag'),
    href: nstring(L.href),
    repo: nstring(L.repo),
    env: {
      ...nstring(
        L.env,
        'docker options: "-e NAME=VALUE -p 8080:8080" (also --env NAME=VALUE, or NAME=VALUE alone)',
      ),
      pattern: DOCKER_OPTIONS_PATTERN,
      example: '-e TZ=UTC -p 8080:8080',
    },
    onstart: {
      type: ['string', 'null'],
      description: 'as create instance takes it (≤ 4048 characters unless gzip+base64)',
    },
    jup_direct: nbool,
    ssh_direct: nbool,
    use_jupyter_lab: nbool,
    runtype: runtypeField('ssh, jupyter, args … (space-separated) as create instance takes it'),
    use_ssh: nbool,
    jupyter_dir: nstring(L.jupyter_dir),
    docker_login_repo: nstring(L.docker_login_repo),
    extra_filters: { type: ['object', 'null'], description: 'an offer search (POST /bundles/ filters)' },
    recommended_disk_space: {
      type: ['number', 'string', 'null'],
      description: 'GB: the disk of an instance created from it unless the create gives one',
    },
    readme: nstring(L.readme),
    readme_visible: nbool,
    desc: nstring(L.desc),
    private: { type: ['boolean', 'null'], description: 'default true: only you see it' },
    hash_id: nstring(L.hash_id, 'update: the version to replace'),
  },
  additionalProperties: true,
} as const;

export const templateReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, template: templateSchema },
} as const;

export const templatesReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, templates: { type: 'array', items: templateSchema } },
} as const;

/** Text that is not blank. */
const filled = (maxLength: number, description: string) =>
  ({ type: 'string', maxLength, pattern: '\\S', description }) as const;

/** A new template: the body with its name and image. */
const createBody = {
  ...templateBody,
  required: ['name', 'image'],
  properties: {
    ...templateBody.properties,
    name: filled(L.name, 'the name of the template (not blank)'),
    image: filled(L.image, 'a container image without its tag, such as "pytorch/pytorch" (not blank)'),
  },
} as const;

export const createTemplate = {
  method: 'POST',
  url: '/api/v0/template',
  schema: {
    tags,
    summary: 'Save an instance configuration as a template',
    body: createBody,
    response: { 200: templateReply, ...authErrors },
  },
} as const;

export const searchTemplates = {
  method: 'GET',
  url: '/api/v0/template',
  schema: {
    tags,
    summary: "Search templates: the caller's own and everyone's public ones, newest first",
    querystring: {
      type: 'object',
      properties: {
        select_filters: jsonObjectText(
          'JSON object of field: {op: value} (eq neq gt gte lt lte in notin); fields id, hash_id, creator_id, name, image, tag, runtype, docker_login_repo, private, use_ssh, ssh_direct, jup_direct, recommended_disk_space, created_at, updated_at (epoch seconds)',
        ),
        select_cols: { type: 'string', description: 'accepted; every field is returned' },
        limit: countText(1000, '1 to 1000, default 100'),
      },
    },
    response: { 200: templatesReply, ...authErrors },
  },
} as const;

export const updateTemplate = {
  method: 'PUT',
  url: '/api/v0/template',
  schema: {
    tags,
    summary: 'Update one of your templates (named by hash_id); it gets a new hash_id',
    body: { ...templateBody, required: ['hash_id'] },
    response: { 200: templateReply, ...authErrors },
  },
} as const;

export const deleteTemplate = {
  method: 'DELETE',
  url: '/api/v0/template',
  schema: {
    tags,
    summary: 'Delete one of your templates, by hash_id or template_id',
    body: {
      type: 'object',
      properties: {
        hash_id: nstring(L.hash_id),
        template_id: { type: ['integer', 'string', 'null'] },
      },
      anyOf: [
        { required: ['hash_id'], properties: { hash_id: { type: 'string', minLength: 1 } } },
        {
          required: ['template_id'],
          properties: {
            hash_id: { type: 'null' },
            template_id: {
              anyOf: [
                { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
                { type: 'string', pattern: '^0*[1-9][0-9]{0,14}$' },
              ],
            },
          },
        },
      ],
      description: 'hash_id or template_id (a positive integer): the template to delete',
      additionalProperties: true,
    },
    response: {
      200: { type: 'object', properties: { success: { type: 'boolean' }, msg: { type: 'string' } } },
      ...authErrors,
    },
  },
} as const;
