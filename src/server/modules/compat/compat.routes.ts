// Routes for the requests of the marketplace's official CLI that openrig does not serve: each
// answers 400 not_supported naming the command, with no authentication (nothing is read or
// changed), so the answer is the same whoever asks.
import type { FastifyInstance } from 'fastify';
import { errorSchema } from '../../http/schemas.js';
import { CompatErrors } from './compat.errors.js';
import { UNSUPPORTED_REQUESTS, notSupportedMsg } from './compat.unsupported.js';

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 200 } },
} as const;
const noParams = { type: 'object', properties: {} } as const;

export async function compatRoutes(app: FastifyInstance): Promise<void> {
  for (const u of UNSUPPORTED_REQUESTS) {
    const msg = notSupportedMsg(u);
    app.route({
      method: u.method,
      url: u.path,
      config: { auth: 'none' },
      schema: {
        tags: ['not supported'],
        summary: `Not supported: ${u.commands.join(', ')}`,
        description: msg,
        params: u.path.includes(':id') ? idParams : noParams,
        querystring: { type: 'object', properties: {} },
        ...(u.method === 'GET' ? {} : { body: {} }),
        response: { 400: errorSchema },
      },
      handler: async () => {
        throw CompatErrors.notSupported(msg);
      },
    });
  }
}
