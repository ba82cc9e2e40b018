import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';

// Routes of this module; empty until the module lands.
export async function platformRoutes(_app: FastifyInstance, _deps: Deps): Promise<void> {}
