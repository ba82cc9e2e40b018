// Error codes are data: each module lists its codes with status and message,
// and throws them; one handler (http/error-handler.ts) turns them into the
// `{error, msg}` body (docs/api.md). A 5xx never shows its cause.

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    msg: string,
    /** Extra fields merged into the error body (e.g. fail_count, locked_until). */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers (e.g. Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(msg);
    this.name = 'AppError';
  }
}

export interface ErrorDef {
  status: number;
  code: string;
  msg: string;
}

export type ErrorFactory = ((msg?: string, extra?: Record<string, unknown>) => AppError) & ErrorDef;

/** Turns `{ name: [status, code, msg] }` into factories: `E.name()` / `E.name('other msg')`. */
export function defineErrors<K extends string>(
  defs: Record<K, [number, string, string]>,
): Record<K, ErrorFactory> {
  const out = {} as Record<K, ErrorFactory>;
  for (const key of Object.keys(defs) as K[]) {
    const [status, code, msg] = defs[key];
    const f = ((m?: string, extra?: Record<string, unknown>) =>
      new AppError(status, code, m ?? msg, extra)) as ErrorFactory;
    Object.assign(f, { status, code, msg });
    out[key] = f;
  }
  return out;
}

/** Errors every module may throw. */
export const CommonErrors = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  authMissing: [401, 'auth_error', 'Invalid user key'],
  invalidKey: [401, 'auth_error', 'Invalid user key'],
  forbidden: [403, 'forbidden', 'This API key is not allowed to make this call'],
  notFound: [404, 'not_found', 'Not found'],
  sessionExpired: [404, 'auth_error', 'Session expired. Please log in again.'],
  conflict: [409, 'conflict', 'Conflict'],
  unsupportedMediaType: [415, 'unsupported_media_type', 'Content-Type must be application/json'],
  payloadTooLarge: [413, 'payload_too_large', 'Request body is too large'],
  internal: [500, 'internal_error', 'Internal server error'],
  unavailable: [503, 'service_unavailable', 'A required service is unavailable; retry'],
});

export { assertNever } from '../contract/assert-never.js';

/** At most `max` characters of a value as JSON, for error messages: a bad value is quoted, never echoed whole. */
export function quoteValue(v: unknown, max = 100): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > max ? `${s.slice(0, max)}… (${s.length} characters)` : s;
}
