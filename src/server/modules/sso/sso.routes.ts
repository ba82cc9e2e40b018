// Single sign-on routes (docs/sso.md): the provider list the sign-in page shows, and the two
// browser legs of the flow, which answer with redirects.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { registerRoutes, route } from '../../http/route.js';
import { setSessionCookie } from '../../http/session-cookie.js';
import * as C from '../../../contract/schemas/sso.js';
import { finishSignIn, listProviders, providerOf, startSignIn } from './sso.service.js';

/**
 * Binds a started sign-in to the browser that started it: it holds the state, and the callback
 * takes only the state it holds. SameSite=Lax, as the provider's redirect back is a top-level
 * navigation from another site (Strict would leave it out); HttpOnly; scoped to the provider's
 * own paths and to the sign-in's life.
 */
const BIND_COOKIE = 'openrig_oidc';
const bindPath = (provider: string) => `/api/v0/auth/oidc/${provider}/`;

function bindOptions(req: FastifyRequest, provider: string) {
  return {
    httpOnly: true,
    sameSite: 'lax',
    secure: req.protocol === 'https',
    path: bindPath(provider),
  } as const;
}

export const providers = route(C.listProviders)({
  config: { auth: 'none' },
  handler: (deps) => async () => listProviders(deps),
});

export const start = route(C.startSignIn)({
  config: { auth: 'none' },
  handler: (deps) => async (req, reply) => {
    const r = await startSignIn(deps, req.params.provider);
    reply.setCookie(BIND_COOKIE, r.state, { ...bindOptions(req, req.params.provider), maxAge: r.maxAgeS });
    return reply.redirect(r.location, 302);
  },
});

/** Sends the browser to the console: signed in, to the 2FA step, or back with a refusal's code. */
function toConsole(reply: FastifyReply, path: string): FastifyReply {
  reply.header('cache-control', 'no-store');
  return reply.redirect(path, 303);
}

export const callback = route(C.finishSignIn)({
  config: { auth: 'none' },
  handler: (deps) => async (req, reply) => {
    const provider = providerOf(deps, req.params.provider).id;
    const bound = req.cookies?.[BIND_COOKIE];
    reply.clearCookie(BIND_COOKIE, bindOptions(req, provider));
    const q = req.url.indexOf('?');
    const r = await finishSignIn(deps, provider, q < 0 ? '' : req.url.slice(q + 1), bound);
    switch (r.kind) {
      case 'session':
        setSessionCookie(req, reply, r.session);
        return toConsole(reply, '/search');
      case 'tfa': {
        // The 2FA step's login secret rides the fragment, which no request carries (not to this
        // server, not in a Referer); the page takes it out of the address at once.
        const f = new URLSearchParams({
          sso_tfa: r.start.tfa_secret,
          methods: JSON.stringify(r.start.methods),
        });
        return toConsole(reply, `/signin#${f.toString()}`);
      }
      case 'refused':
        return toConsole(reply, `/signin#sso_error=${r.code}`);
    }
  },
});

export const ssoRouteList = [providers, start, callback];

export async function ssoRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, ssoRouteList);
}
