// The template calls of the official CLI: create, search, update and delete templates, all on
// /api/v0/template/ (docs/templates.md). Reads need `instances` read, writes `instances` write:
// a template is an instance configuration.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors } from '../../http/schemas.js';
import {
  createTemplate,
  deleteTemplate,
  searchTemplates,
  updateTemplate,
  type SearchQuery,
} from './templates.service.js';
import { templateSchema } from './templates.view.js';
import { TEMPLATE_LIMITS as L } from './templates.request.js';

const nstring = (maxLength: number, description?: string) => ({
  type: ['string', 'null'],
  maxLength,
  ...(description ? { description } : {}),
});
const nbool = { type: ['boolean', 'null'] } as const;

/** The create and update body. Each field is checked further by parseTemplateBody (templates.request.ts). */
const templateBody = {
  type: 'object',
  properties: {
    name: nstring(L.name),
    image: nstring(L.image, 'a container image without its tag, e.g. "pytorch/pytorch"'),
    tag: nstring(L.tag, 'appended as image:tag'),
    href: nstring(L.href),
    repo: nstring(L.repo),
    env: nstring(L.env, 'docker options: "-e NAME=VALUE -p 8080:8080"'),
    onstart: {
      type: ['string', 'null'],
      description: 'as create instance takes it (≤ 4048 characters unless gzip+base64)',
    },
    jup_direct: nbool,
    ssh_direct: nbool,
    use_jupyter_lab: nbool,
    runtype: { type: ['string', 'null'], description: 'ssh, jupyter, args … as create instance takes it' },
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

const one = {
  type: 'object',
  properties: { success: { type: 'boolean' }, template: templateSchema },
} as const;

interface TemplateBody {
  [field: string]: unknown;
}

export async function templatesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post<{ Body: TemplateBody | undefined }>(
    '/api/v0/template',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['templates'],
        summary: 'Save an instance configuration as a template',
        body: templateBody,
        response: { 200: one, ...authErrors },
      },
    },
    async (req) => ({ success: true, template: await createTemplate(deps, requireAuth(req), req.body) }),
  );
  app.get<{ Querystring: SearchQuery }>(
    '/api/v0/template',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['templates'],
        summary: "Search templates: the caller's own and everyone's public ones, newest first",
        querystring: {
          type: 'object',
          properties: {
            select_filters: {
              type: 'string',
              description:
                'JSON object of field: {op: value} (eq neq gt gte lt lte in notin); fields id, hash_id, creator_id, name, image, tag, runtype, docker_login_repo, private, use_ssh, ssh_direct, jup_direct, recommended_disk_space, created_at, updated_at (epoch seconds)',
            },
            select_cols: { type: 'string', description: 'accepted; every field is returned' },
            limit: { type: 'string', description: '1 to 1000, default 100' },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: { success: { type: 'boolean' }, templates: { type: 'array', items: templateSchema } },
          },
          ...authErrors,
        },
      },
    },
    async (req) => ({ success: true, templates: await searchTemplates(deps, requireAuth(req), req.query) }),
  );
  app.put<{ Body: TemplateBody | undefined }>(
    '/api/v0/template',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['templates'],
        summary: 'Update one of your templates (named by hash_id); it gets a new hash_id',
        body: { ...templateBody, required: ['hash_id'] },
        response: { 200: one, ...authErrors },
      },
    },
    async (req) => ({ success: true, template: await updateTemplate(deps, requireAuth(req), req.body) }),
  );
  app.delete<{ Body: TemplateBody | undefined }>(
    '/api/v0/template',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['templates'],
        summary: 'Delete one of your templates, by hash_id or template_id',
        body: {
          type: 'object',
          properties: {
            hash_id: nstring(L.hash_id),
            template_id: { type: ['integer', 'string', 'null'] },
          },
          additionalProperties: true,
        },
        response: {
          200: { type: 'object', properties: { success: { type: 'boolean' }, msg: { type: 'string' } } },
          ...authErrors,
        },
      },
    },
    async (req) => ({ success: true, msg: await deleteTemplate(deps, requireAuth(req), req.body) }),
  );
}
