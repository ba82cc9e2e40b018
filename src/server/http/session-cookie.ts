// The browser session cookie: HttpOnly, SameSite=Strict (no other site's page or link sends it;
// cookie writes also need the CSRF header, http/auth.ts), and Secure whenever the server is reached
// over HTTPS, directly or through a trusted proxy (req.protocol believes X-Forwarded-Proto only
// from the proxies in OPENRIG_TRUST_PROXY), so a browser never sends it over plain HTTP.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_COOKIE } from './auth.js';

export function setSessionCookie(
  req: FastifyRequest,
  reply: FastifyReply,
  cookie: { token: string; expiresAt: number },
): void {
  reply.setCookie(SESSION_COOKIE, cookie.token, {
    httpOnly: true,
    sameSite: 'strict',
    secure: req.protocol === 'https',
    path: '/',
    expires: new Date(cookie.expiresAt),
  });
}

export function clearSessionCookie(req: FastifyRequest, reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, {
    httpOnly: true,
    sameSite: 'strict',
    secure: req.protocol === 'https',
    path: '/',
  });
}
