// The requests of the marketplace's official CLI that openrig does not serve: each answers 400
// not_supported naming the command. The server lists them (modules/compat/compat.unsupported.ts);
// this is the contract of one of them.
import { errorSchema } from './common.js';

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 200 } },
} as const;
const noParams = { type: 'object', properties: {} } as const;

/** A refused request: its method, its path (parameters as `:name`) and the CLI commands that send it. */
export interface RefusedRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly commands: readonly string[];
}

/** The contract of a refused request; `msg` is the reply's message, also its description. */
export function notSupported(u: RefusedRequest, msg: string) {
  return {
    method: u.method,
    url: u.path,
    schema: {
      tags: ['not supported'],
      summary: `Not supported: ${u.commands.join(', ')}`,
      description: msg,
      params: u.path.includes(':id') ? idParams : noParams,
      querystring: { type: 'object', properties: {} },
      ...(u.method === 'GET' ? {} : { body: {} }),
      response: { 400: errorSchema },
    },
  } as const;
}
