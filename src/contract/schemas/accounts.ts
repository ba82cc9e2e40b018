// The account API: the user object (GET /users/current, the settings reply, the login reply),
// account settings, logout and ending every session.
import { authErrors, errorSchema, idParams, PLAIN_TEXT_PATTERN, successReply } from './common.js';

const tags = ['users'] as const;

/** The user object; its account settings come with GET /users/current. */
export const userSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    email: { type: 'string' },
    full_name: { type: 'string' },
    fullname: { type: 'string' },
    username: { type: 'string' },
    tfa_status: { type: 'string', enum: ['enabled', 'disabled', 'legacy'] },
    tfa_enabled: { type: 'boolean' },
    email_verified: { type: 'boolean' },
    email_verified_at: { type: ['number', 'null'] },
    phone_number: { type: ['string', 'null'] },
    is_admin: { type: 'boolean' },
    sms_fraud: { type: 'boolean' },
    balance: { type: 'number' },
    credit: { type: 'number' },
    team_id: { type: ['integer', 'null'] },
    created_at: { type: 'number' },
    ssh_key: { type: ['string', 'null'] },
    billaddress_line1: { type: ['string', 'null'] },
    billaddress_line2: { type: ['string', 'null'] },
    billaddress_city: { type: ['string', 'null'] },
    billaddress_zip: { type: ['string', 'null'] },
    billaddress_country: { type: ['string', 'null'] },
    billaddress_taxinfo: { type: ['string', 'null'] },
    balance_threshold_enabled: { type: 'boolean', description: 'the balance.low alert is on' },
    balance_threshold: {
      type: ['number', 'null'],
      description: "dollars: the alert's threshold, or the one last given while it is off",
    },
    api_key: { type: 'string' },
    session_key: { type: 'string' },
    backup_codes_remaining: { type: 'integer' },
    legacy_tfa_user: { type: 'boolean' },
    credit_help: {
      type: 'string',
      description: "how to get credit on this installation, in its operator's words (OPENRIG_CREDIT_HELP)",
    },
  },
} as const;

export const currentUser = {
  method: 'GET',
  url: '/api/v0/users/current',
  schema: {
    tags,
    summary: 'The caller, with the credential presented as api_key',
    response: { 200: userSchema, 401: errorSchema },
  },
} as const;

export const accountSettingsReply = successReply({ user: userSchema });

/** A text setting: plain text of at most `maxLength` characters; null (or "") clears it. */
const setting = (maxLength: number, description?: string) =>
  ({ type: ['string', 'null'], maxLength, pattern: PLAIN_TEXT_PATTERN, description }) as const;

/**
 * The settings body: only the fields that change. The server checks it field by field first, so that
 * a refused field's message says how that field is changed (the e-mail address, a password, the
 * SMS number are refused with where to change them); the schema holds the same rules.
 */
export const accountSettingsBody = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    fullname: setting(200),
    full_name: setting(200, 'fullname, under the name GET /users/current shows (give one of them)'),
    billaddress_line1: setting(200),
    billaddress_line2: setting(200),
    billaddress_city: setting(100),
    billaddress_zip: setting(32),
    billaddress_country: setting(100),
    billaddress_taxinfo: setting(100),
    balance_threshold_enabled: {
      type: ['boolean', 'string'],
      pattern: '^\\s*(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\\s*$',
      description: 'the balance.low alert on or off ("true" and "false" are taken too); on needs a threshold',
    },
    balance_threshold: {
      type: ['number', 'string', 'null'],
      minimum: 0,
      maximum: 1e9,
      pattern: '^\\s*(?:[0-9]{1,9}(?:\\.[0-9]*)?|\\.[0-9]+|1000000000(?:\\.0*)?)\\s*$',
      description: 'dollars, 0 to 1e9 (a number, or one as a string); null forgets it (with the alert off)',
    },
    paypal_email: {
      type: ['string', 'null'],
      maxLength: 200,
      pattern: '^\\s*(?:[^\\s@]+@[^\\s@]+\\.[^\\s@]+\\s*)?$',
      description:
        "a host's payout destination: its PayPal e-mail (payouts by paypal_manual); null or empty forgets it",
    },
    wise_email: {
      type: ['string', 'null'],
      maxLength: 200,
      pattern: '^\\s*(?:[^\\s@]+@[^\\s@]+\\.[^\\s@]+\\s*)?$',
      description:
        "a host's payout destination: its Wise e-mail (payouts by wise_manual); null or empty forgets it",
    },
  },
} as const;

/** The official CLI's `set user --file F` sends the file's JSON object, with no id in the path. */
export const updateAccount = {
  method: 'PUT',
  url: '/api/v0/users',
  schema: {
    tags,
    summary: "Change the caller's account settings (name, billing address, balance threshold)",
    body: accountSettingsBody,
    response: { 200: accountSettingsReply, ...authErrors },
  },
} as const;

export const updateAccountById = {
  method: 'PUT',
  url: '/api/v0/users/:id',
  schema: {
    tags,
    summary: "PUT /users/ with the caller's own id in the path; another id is 404",
    params: idParams,
    body: accountSettingsBody,
    response: { 200: accountSettingsReply, ...authErrors },
  },
} as const;

export const sessionsEnded = successReply({ sessions_ended: { type: 'integer' } });

const noBody = { type: ['object', 'null'], additionalProperties: false, properties: {} } as const;

export const logout = {
  method: 'POST',
  url: '/api/v0/users/logout',
  schema: {
    tags,
    summary: 'End the session presented (session_key Bearer or session cookie)',
    body: noBody,
    response: { 200: sessionsEnded, ...authErrors },
  },
} as const;

export const endSessions = {
  method: 'DELETE',
  url: '/api/v0/users/sessions',
  schema: {
    tags,
    summary: "End all of the caller's sessions (CLI and browser); API keys stay valid",
    body: noBody,
    response: { 200: sessionsEnded, ...authErrors },
  },
} as const;

// ---- Account basics an operator switches on: sign-up, password reset and change ----

const msgReply = successReply({ msg: { type: 'string' } });
/** An e-mail address as the server takes it: surrounding white space aside, at most 254 characters. */
const emailAddress = {
  type: 'string',
  maxLength: 320,
  pattern: '^\\s*(?=\\S{1,254}\\s*$)[^\\s@]+@[^\\s@]+\\.[^\\s@]+\\s*$',
  description: 'an e-mail address, e.g. you@example.com',
} as const;
/** A new password: NIST SP 800-63B's at least 8 characters; at most 256 keeps hashing cheap. */
const newPassword = {
  type: 'string',
  minLength: 8,
  maxLength: 256,
  description: '8 to 256 characters',
} as const;
const token = {
  type: 'string',
  maxLength: 200,
  description: 'the token of the e-mailed link (its `token` query parameter)',
} as const;

export const signup = {
  method: 'POST',
  url: '/api/v0/users/signup',
  schema: {
    tags,
    summary:
      'Sign up (when the operator set OPENRIG_SIGNUP on): e-mails a link that creates the account; the reply never says whether the e-mail has one',
    body: {
      type: 'object',
      required: ['email', 'password'],
      additionalProperties: false,
      properties: {
        email: emailAddress,
        password: newPassword,
        full_name: { type: 'string', maxLength: 200 },
      },
    },
    response: { 200: msgReply, 400: errorSchema, 403: errorSchema },
  },
} as const;

export const verifySignup = {
  method: 'POST',
  url: '/api/v0/users/signup/verify',
  schema: {
    tags,
    summary: "Follow a sign-up's link: creates the account, its e-mail verified (once)",
    body: { type: 'object', required: ['token'], additionalProperties: false, properties: { token } },
    response: {
      200: successReply({ msg: { type: 'string' }, email: { type: 'string' } }),
      400: errorSchema,
    },
  },
} as const;

export const requestPasswordReset = {
  method: 'POST',
  url: '/api/v0/users/password-reset',
  schema: {
    tags,
    summary:
      'E-mail a single-use password reset link; the reply never says whether the e-mail has an account',
    body: {
      type: 'object',
      required: ['email'],
      additionalProperties: false,
      properties: { email: emailAddress },
    },
    response: { 200: msgReply, 400: errorSchema },
  },
} as const;

export const confirmPasswordReset = {
  method: 'POST',
  url: '/api/v0/users/password-reset/confirm',
  schema: {
    tags,
    summary: "Set a new password with a reset link's token (once); every session of the account ends",
    body: {
      type: 'object',
      required: ['token', 'password'],
      additionalProperties: false,
      properties: { token, password: newPassword },
    },
    response: { 200: msgReply, 400: errorSchema },
  },
} as const;

export const changePassword = {
  method: 'PUT',
  url: '/api/v0/users/password',
  schema: {
    tags,
    summary: "Change the caller's password (the current one is asked); the caller's other sessions end",
    body: {
      type: 'object',
      required: ['current_password', 'new_password'],
      additionalProperties: false,
      properties: {
        current_password: { type: 'string', maxLength: 1024 },
        new_password: newPassword,
      },
    },
    response: { 200: msgReply, ...authErrors },
  },
} as const;

/**
 * POST /users/: with `parent_id: "me"` (the official CLI's `create subaccount`), the caller makes
 * a subaccount; without it, a sign-up as POST /users/signup (when the operator set OPENRIG_SIGNUP).
 */
export const createUser = {
  method: 'POST',
  url: '/api/v0/users',
  schema: {
    tags,
    summary:
      'With parent_id "me": create a subaccount of yours (its API key is in the reply, once). Without: sign up, as POST /users/signup',
    body: {
      type: 'object',
      required: ['email', 'password'],
      additionalProperties: false,
      properties: {
        email: { type: 'string', maxLength: 320 },
        password: { type: 'string', maxLength: 1024, description: '8 to 256 characters' },
        username: { type: ['string', 'null'], maxLength: 100, pattern: PLAIN_TEXT_PATTERN },
        full_name: { type: 'string', maxLength: 200, pattern: PLAIN_TEXT_PATTERN },
        host_only: { type: ['boolean', 'null'], description: 'a subaccount for hosting only' },
        parent_id: {
          type: ['string', 'integer', 'null'],
          description: '"me" (or your own id): the new account is your subaccount',
        },
      },
    },
    response: {
      200: successReply({
        id: { type: 'integer' },
        email: { type: 'string' },
        username: { type: 'string' },
        host_only: { type: 'boolean' },
        parent_id: { type: 'integer' },
        api_key: { type: 'string', description: "the subaccount's API key, shown once" },
      }),
      ...authErrors,
      409: errorSchema,
    },
  },
} as const;
