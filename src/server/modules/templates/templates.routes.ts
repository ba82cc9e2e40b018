// The template calls of the official CLI: create, search, update and delete templates, all on
// /api/v0/template/ (docs/templates.md). Reads need `instances` read, writes `instances` write:
// a template is an instance configuration.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/templates.js';
import {
  createTemplate as create,
  deleteTemplate as remove,
  searchTemplates as search,
  updateTemplate as update,
} from './templates.service.js';

export const createTemplate = route(C.createTemplate)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({
    success: true,
    template: await create(deps, requireAuth(req), req.body),
  }),
});

export const searchTemplates = route(C.searchTemplates)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({
    success: true,
    templates: await search(deps, requireAuth(req), req.query),
  }),
});

export const updateTemplate = route(C.updateTemplate)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({
    success: true,
    template: await update(deps, requireAuth(req), req.body),
  }),
});

export const deleteTemplate = route(C.deleteTemplate)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({ success: true, msg: await remove(deps, requireAuth(req), req.body) }),
});

export const templateRoutes = [createTemplate, searchTemplates, updateTemplate, deleteTemplate];

export async function templatesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, templateRoutes);
}
