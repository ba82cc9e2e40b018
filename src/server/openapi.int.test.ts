import { expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describeEachDb } from '../../test/helpers/db.js';
import { useTestApp } from '../../test/helpers/app.js';

/** Fastify's `/a/:id` is OpenAPI's `/a/{id}`. */
function toOpenApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

describeEachDb('openapi document', (dialect) => {
  const t = useTestApp(dialect);

  it('is a valid OpenAPI 3.1 document with info.version 1.0.0', async () => {
    const r = await t().request('GET', '/api/v0/openapi.json');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.body.openapi).toBe('3.1.0');
    expect(r.body.info.version).toBe('1.0.0');
    const v = new Validator();
    const res = await v.validate(r.body);
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
  });

  it('lists every route the server answers (except the hidden probes)', async () => {
    const doc = (await t().request('GET', '/api/v0/openapi.json')).body;
    const routes = t().app.openrigRoutes.filter((r) => !r.hidden && r.url !== '*');
    expect(routes.length).toBeGreaterThan(8);
    const missing = routes.filter((r) => !doc.paths?.[toOpenApiPath(r.url)]?.[r.method.toLowerCase()]);
    expect(missing).toEqual([]);
  });
});
