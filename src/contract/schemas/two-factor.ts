// Two-factor authentication: status, adding, changing and removing methods, sending codes, and the
// password and 2FA logins. The published API gives exact error codes for some bad values: a rule
// the schema states carries its code in `x-error-code` (invalid_tfa_method, missing_params), which
// the server answers instead of bad_request; plain type errors are 400 bad_request. Rules that
// depend on the account (missing_auth_value, a phone number the account may hold) stay in code.
// Existing clients may send `tfa_method_id` as a string of digits; the body may be null where no
// field is required.
import { errorSchema, PLAIN_TEXT_PATTERN, rowId } from './common.js';
import { userSchema } from './accounts.js';

const tags = ['2fa'] as const;
const BASE = '/api/v0/tfa';

const idField = {
  anyOf: [rowId, { type: 'string', pattern: '^[0-9]{1,15}$' }],
} as const;

/** Every field a 2FA request body may carry; each route's body takes some of them. */
export const bodyFields = {
  tfa_method: {
    type: 'string',
    // Any case; empty is as if not given.
    pattern: '^(?:|[sS][mM][sS]|[tT][oO][tT][pP]|[eE][mM][aA][iI][lL])$',
    description: 'sms, totp or email',
    example: 'totp',
    'x-error-code': 'invalid_tfa_method',
  },
  tfa_method_id: { ...idField, description: 'Method id (an integer; a string of digits is accepted)' },
  target_id: { ...idField, description: 'Method to remove' },
  code: { type: 'string', description: '6-digit code' },
  secret: {
    type: 'string',
    maxLength: 200,
    description: 'tfa_secret of a challenge (for confirm-new TOTP: the base32 secret)',
  },
  backup_code: { type: 'string', maxLength: 64, description: 'XXXX-XXXX-XXXX' },
  phone_number: { type: 'string', maxLength: 32, description: 'E.164' },
  label: { type: 'string', pattern: PLAIN_TEXT_PATTERN, description: 'At most 30 characters' },
  is_primary: { type: 'boolean' },
  admin: { type: 'boolean' },
} as const;

type Fields = typeof bodyFields;

/** A body of the fields `keys` (an object, or null). */
function bodyOf<const K extends keyof Fields>(...keys: K[]) {
  const properties = Object.fromEntries(keys.map((k) => [k, bodyFields[k]])) as {
    readonly [P in K]: Fields[P];
  };
  return { type: ['object', 'null'], properties } as const;
}

/** A 2FA method, as the status and update replies show it (a TOTP secret is never shown). */
export const methodSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    user_id: { type: 'integer' },
    method: { type: 'string', enum: ['sms', 'totp'] },
    label: { type: 'string' },
    phone_number: { type: ['string', 'null'], description: 'Masked: only the last 4 digits' },
    is_primary: { type: 'boolean' },
    fail_count: { type: 'integer' },
    locked_until: { type: ['number', 'null'] },
    created_at: { type: 'number' },
    last_used: { type: 'number' },
  },
} as const;

/** Error replies of the 2FA routes (tfa_locked / 2fa_verification_failed add fail_count, locked_until). */
export const tfaErrorSchema = {
  ...errorSchema,
  properties: {
    ...errorSchema.properties,
    fail_count: { type: 'integer' },
    locked_until: { type: ['number', 'null'] },
  },
} as const;

export const tfaErrors = {
  400: tfaErrorSchema,
  401: tfaErrorSchema,
  403: tfaErrorSchema,
  404: tfaErrorSchema,
  429: tfaErrorSchema,
  500: tfaErrorSchema,
  503: tfaErrorSchema,
} as const;

const ok = { success: { type: 'boolean' }, msg: { type: 'string' } } as const;
const okReply = { type: 'object', properties: ok } as const;
const secretReply = { type: 'object', properties: { ...ok, secret: { type: 'string' } } } as const;
const codesReply = {
  type: 'object',
  properties: { ...ok, backup_codes: { type: 'array', items: { type: 'string' } } },
} as const;

export const statusReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    tfa_enabled: { type: 'boolean' },
    methods: { type: 'array', items: methodSchema },
    backup_codes_remaining: { type: 'integer' },
    new_method_authorized: { type: 'boolean' },
  },
} as const;

/** A body that must carry `keys` (non-empty text): missing_params otherwise. */
function bodyRequiring<const K extends keyof Fields, const R extends K>(
  required: readonly R[],
  ...keys: K[]
) {
  const { properties } = bodyOf(...keys);
  return {
    type: 'object',
    properties,
    required,
    // Each required field non-empty (an empty field counts as not given).
    allOf: required.map((k) => ({
      properties: { [k]: { minLength: 1, 'x-error-code': 'missing_params' } },
    })),
    description: `${required.join(' and ')} are required`,
    'x-error-code': 'missing_params',
  } as const;
}

/** The verification fields shared by the 2FA login, DELETE tfa/ and regen-backup-codes. */
export const verificationBody = bodyOf('tfa_method', 'code', 'secret', 'tfa_method_id', 'backup_code');
const smsBody = bodyOf('phone_number', 'tfa_method_id', 'secret');
/** tfa_method where only a stored method fits: e-mail is none (invalid_tfa_method). */
const storedMethod = (description: string) =>
  ({ ...bodyFields.tfa_method, pattern: '^(?:|[sS][mM][sS]|[tT][oO][tT][pP])$', description }) as const;
const confirmFields = bodyRequiring(
  ['code', 'secret'],
  'tfa_method',
  'code',
  'secret',
  'phone_number',
  'label',
);
/** Adding a method: code and secret, an SMS or TOTP method (e-mail is no stored method). */
const confirmBody = {
  ...confirmFields,
  properties: {
    ...confirmFields.properties,
    tfa_method: storedMethod('sms or totp (default: sms when phone_number is given, else totp)'),
    code: {
      type: 'string',
      pattern: '^\\s*[0-9]{6}\\s*$',
      description: 'the 6-digit code',
      example: '123456',
    },
  },
} as const;
/** Changing a method: which one (its id, or its type when it is the only one) and what changes. */
const updateBody = {
  type: 'object',
  properties: {
    ...bodyOf('tfa_method_id', 'tfa_method', 'label', 'is_primary').properties,
    tfa_method: storedMethod('sms or totp'),
  },
  allOf: [
    {
      anyOf: [
        { required: ['tfa_method_id'] },
        { required: ['tfa_method'], properties: { tfa_method: { minLength: 1 } } },
      ],
      description: 'tfa_method_id (or tfa_method when one method of that type exists) is required',
    },
    {
      anyOf: [{ required: ['label'] }, { required: ['is_primary'] }],
      description: 'label or is_primary: what to change',
    },
  ],
} as const;

export const passwordLogin = {
  method: 'POST',
  url: '/api/v0/users/login',
  schema: {
    tags: ['users'],
    summary: 'Password login: the user object and a session cookie, or a 2FA challenge',
    body: {
      type: 'object',
      required: ['email', 'password'],
      properties: {
        email: { type: 'string', maxLength: 320 },
        password: { type: 'string', maxLength: 1024 },
      },
    },
    response: {
      200: {
        type: 'object',
        properties: {
          ...userSchema.properties,
          success: { type: 'boolean' },
          tfa_required: { type: 'boolean' },
          tfa_secret: { type: 'string' },
          methods: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                method: { type: 'string' },
                label: { type: 'string' },
                is_primary: { type: 'boolean' },
              },
            },
          },
        },
      },
      400: errorSchema,
      401: errorSchema,
      429: errorSchema,
    },
  },
} as const;

export const tfaStatus = {
  method: 'GET',
  url: `${BASE}/status`,
  schema: { tags, summary: '2FA status and methods', response: { 200: statusReply, ...tfaErrors } },
} as const;

export const totpSetup = {
  method: 'POST',
  url: `${BASE}/totp-setup`,
  schema: {
    tags,
    summary: 'A new TOTP secret and otpauth:// URI (adds nothing)',
    body: bodyOf(),
    response: {
      200: {
        type: 'object',
        properties: { secret: { type: 'string' }, provisioning_uri: { type: 'string' } },
      },
      ...tfaErrors,
    },
  },
} as const;

export const authorizeStart = {
  method: 'POST',
  url: `${BASE}/authorize-new-method`,
  schema: {
    tags,
    summary: 'Step 1 of adding a method: send a code, or authorize with a backup code',
    body: bodyOf('tfa_method', 'tfa_method_id', 'backup_code'),
    response: { 200: secretReply, ...tfaErrors },
  },
} as const;

export const authorizeConfirm = {
  method: 'PUT',
  url: `${BASE}/authorize-new-method`,
  schema: {
    tags,
    summary: 'Step 2: the code opens the 30-minute add-method window',
    body: bodyRequiring(['code', 'secret'], 'code', 'secret'),
    response: { 200: okReply, ...tfaErrors },
  },
} as const;

export const confirmNew = {
  method: 'POST',
  url: `${BASE}/confirm-new`,
  schema: {
    tags,
    summary: 'Add an SMS or TOTP method (inside the window)',
    body: confirmBody,
    response: { 200: codesReply, ...tfaErrors },
  },
} as const;

export const sendEmail = {
  method: 'POST',
  url: `${BASE}/email`,
  schema: {
    tags,
    summary: 'Send a 6-digit code to the verified e-mail address',
    body: bodyOf('secret'),
    response: { 200: secretReply, ...tfaErrors },
  },
} as const;

export const sendSms = {
  method: 'POST',
  url: `${BASE}/sms`,
  schema: { tags, summary: 'Send an SMS code', body: smsBody, response: { 200: secretReply, ...tfaErrors } },
} as const;

export const resendSms = {
  method: 'POST',
  url: `${BASE}/sms/resend`,
  schema: {
    tags,
    summary: 'Resend an SMS code (the previous one stops working)',
    body: smsBody,
    response: { 200: secretReply, ...tfaErrors },
  },
} as const;

export const tfaLogin = {
  method: 'POST',
  url: BASE,
  schema: {
    tags,
    summary: 'Complete a 2FA login',
    body: bodyOf('tfa_method', 'code', 'secret', 'tfa_method_id', 'backup_code', 'admin'),
    response: {
      200: { type: 'object', properties: { ...userSchema.properties, success: { type: 'boolean' } } },
      ...tfaErrors,
    },
  },
} as const;

export const removeMethod = {
  method: 'DELETE',
  url: BASE,
  schema: {
    tags,
    summary: 'Remove a 2FA method (the last one disables 2FA)',
    body: bodyOf('tfa_method', 'code', 'secret', 'tfa_method_id', 'target_id', 'backup_code'),
    response: {
      200: { type: 'object', properties: { ...ok, remaining_methods: { type: 'integer' } } },
      ...tfaErrors,
    },
  },
} as const;

export const updateMethod = {
  method: 'PUT',
  url: `${BASE}/update`,
  schema: {
    tags,
    summary: 'Set the label or primary flag of an SMS or TOTP method',
    body: updateBody,
    response: { 200: { type: 'object', properties: { ...ok, method: methodSchema } }, ...tfaErrors },
  },
} as const;

export const regenBackupCodes = {
  method: 'PUT',
  url: `${BASE}/regen-backup-codes`,
  schema: {
    tags,
    summary: 'Replace all backup codes with a fresh set of 10',
    body: verificationBody,
    response: { 200: codesReply, ...tfaErrors },
  },
} as const;

// Deprecated but still served: they behave as their successors, plus a Deprecation header.

export const legacySms = {
  method: 'POST',
  url: `${BASE}/test`,
  schema: {
    tags,
    deprecated: true,
    summary: 'Deprecated: use POST /api/v0/tfa/sms/',
    body: smsBody,
    response: { 200: secretReply, ...tfaErrors },
  },
} as const;

export const legacyResend = {
  method: 'POST',
  url: `${BASE}/resend`,
  schema: {
    tags,
    deprecated: true,
    summary: 'Deprecated: use POST /api/v0/tfa/sms/resend/',
    body: smsBody,
    response: { 200: secretReply, ...tfaErrors },
  },
} as const;

export const legacyConfirm = {
  method: 'POST',
  url: `${BASE}/test-submit`,
  schema: {
    tags,
    deprecated: true,
    summary: 'Deprecated: use POST /api/v0/tfa/confirm-new/',
    body: confirmBody,
    response: { 200: codesReply, ...tfaErrors },
  },
} as const;
