// The web console: the single-page app built into dist/web (by `npm run build`, run by `npm ci`),
// served at `/`. Hashed files under /assets/ never change under their name, so browsers keep them
// a year; index.html is revalidated on every load so a new build is picked up at once. Any other
// GET outside /api/ is a client-side route and answers index.html. The API keeps its JSON 404s.
// Everything the console answers carries a strict Content-Security-Policy: scripts, styles and
// every other resource come only from this server, with no inline script or style (the build
// has none: styles are in its CSS file, and React's style props set the CSSOM, which a policy
// does not govern), no plug-ins, no <base> or form target elsewhere, and no framing by any page
// (clickjacking). Browsers may not guess another type than the one sent, and only pages of this
// server learn the address the console was at.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';
import { sendError } from './error-handler.js';
import { packageRoot } from '../../contract/package-root.js';

/** The package's dist/web, wherever this module runs from. */
export function defaultConsoleDir(): string {
  return path.join(packageRoot(), 'dist/web');
}

const YEAR_S = 365 * 24 * 3600;

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The headers of every reply of the console: its page, its assets and its icon. */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // Same-origin requests keep their Referer and Origin (the API checks a cookie write's Origin).
  'referrer-policy': 'same-origin',
};

export async function installConsole(app: FastifyInstance, dir: string): Promise<boolean> {
  if (!existsSync(path.join(dir, 'index.html'))) return false;
  await app.register(fastifyStatic, { root: dir, serve: false });
  const route = {
    config: { auth: 'none' as const },
    schema: { hide: true },
    onRequest: (_req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      reply.headers(CONSOLE_HEADERS);
      done();
    },
  };

  const page = (reply: FastifyReply) =>
    reply.header('cache-control', 'no-cache').sendFile('index.html', { cacheControl: false });

  app.get('/', route, (_req, reply) => page(reply));
  app.get('/assets/*', route, (req: FastifyRequest, reply) => {
    const rel = (req.params as { '*': string })['*'];
    return reply.sendFile(`assets/${rel}`, { maxAge: YEAR_S * 1000, immutable: true });
  });
  app.get('/*', route, (req: FastifyRequest, reply) => {
    const p = req.url.split('?')[0]!;
    if (p.startsWith('/api/') || p === '/api') {
      return sendError(reply, 404, 'not_found', `No route for ${req.method} ${p}`);
    }
    const rel = (req.params as { '*': string })['*'];
    // Files at the top of the build (the icon) by name; everything else is a route of the app.
    if (/^[\w.-]+\.(?:svg|ico|png|txt|webmanifest)$/.test(rel)) {
      const f = path.join(dir, rel);
      if (existsSync(f) && statSync(f).isFile()) return reply.sendFile(rel, { maxAge: 3600 * 1000 });
    }
    return page(reply);
  });
  return true;
}
