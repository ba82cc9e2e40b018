// Error codes of the platform module, as data.
import { AppError, defineErrors } from '../../errors.js';

export const PlatformErrors = defineErrors({
  metricsAuth: [401, 'auth_error', 'GET /metrics needs Authorization: Bearer <OPENRIG_METRICS_TOKEN>'],
  metricsOff: [
    403,
    'forbidden',
    'GET /metrics is not served on the API port without OPENRIG_METRICS_TOKEN; set it, or use serve --metrics-port',
  ],
});

/** 429 with the usual `{error, msg}` body and a Retry-After header (RFC 9110, 10.2.3). */
export function rateLimited(what: string, retryAfterS: number): AppError {
  return new AppError(
    429,
    'rate_limited',
    `Too many ${what}; retry in ${retryAfterS} seconds`,
    {},
    { 'retry-after': String(retryAfterS) },
  );
}
