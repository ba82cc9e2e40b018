// The server's own routes that are not part of the API: hidden from the OpenAPI document.

/** GET /metrics: Prometheus text format, for scrapers (its token as Bearer). */
export const metrics = {
  method: 'GET',
  url: '/metrics',
  schema: { hide: true },
} as const;
