// Single sign-on with OpenID Connect (docs/sso.md): the providers the sign-in page offers, and the
// two browser legs of the authorization-code flow. `start` and `callback` are navigations, not
// API calls: they answer with redirects (302 to the provider, 303 back to the console).
import { errorSchema } from './common.js';

const tags = ['sso'] as const;

const providerParams = {
  type: 'object',
  required: ['provider'],
  properties: {
    provider: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,31}$', description: "the provider's id" },
  },
} as const;

export const listProviders = {
  method: 'GET',
  url: '/api/v0/auth/oidc/providers',
  schema: {
    tags,
    summary: 'The single sign-on providers this installation offers (anyone may ask)',
    response: {
      200: {
        type: 'object',
        required: ['providers'],
        properties: {
          providers: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'name', 'start_url'],
              properties: {
                id: { type: 'string' },
                name: { type: 'string', description: 'shown as "Sign in with {name}"' },
                start_url: { type: 'string', description: 'where the browser goes to sign in' },
              },
            },
          },
        },
      },
    },
  },
} as const;

export const startSignIn = {
  method: 'GET',
  url: '/api/v0/auth/oidc/:provider/start',
  schema: {
    tags,
    summary: "Starts a sign-in: redirects the browser to the provider's authorization endpoint",
    description:
      'Sets a short-lived cookie that binds the sign-in to this browser; the state, nonce and PKCE challenge go to the provider.',
    params: providerParams,
    // 302 to the provider (the Location header); the document lists the JSON answers only.
    response: { 400: errorSchema, 404: errorSchema, 502: errorSchema },
  },
} as const;

export const finishSignIn = {
  method: 'GET',
  url: '/api/v0/auth/oidc/:provider/callback',
  schema: {
    tags,
    summary: "The provider's redirect back: verifies the sign-in and redirects to the console",
    description:
      'Signed in: 303 to /search with the session cookie set. The account has 2FA (and the provider is not trusted for it): 303 to /signin#sso_tfa=… for the second step. Refused: 303 to /signin#sso_error=CODE.',
    params: providerParams,
    querystring: {
      type: 'object',
      properties: {
        code: { type: 'string', maxLength: 4096 },
        state: { type: 'string', maxLength: 512 },
        iss: { type: 'string', maxLength: 2048 },
        error: { type: 'string', maxLength: 256 },
        error_description: { type: 'string', maxLength: 2048 },
      },
    },
    // 303 to the console (the Location header); the document lists the JSON answers only.
    response: { 400: errorSchema, 404: errorSchema },
  },
} as const;
