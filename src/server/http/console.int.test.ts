// The console's page, assets and icon carry a strict Content-Security-Policy, refuse framing and
// type sniffing and keep their address to this server; every API reply refuses type sniffing too.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { buildApp } from '../app.js';

describeEachDb('console security headers', (dialect) => {
  const t = useTestApp(dialect);
  let dir: string;
  let app: FastifyInstance;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-console-headers-'));
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(
      path.join(dir, 'index.html'),
      '<!doctype html><script type="module" src="/assets/a.js"></script>',
    );
    writeFileSync(path.join(dir, 'assets/a-1234.js'), 'console.log(1)');
    writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    app = await buildApp(t().deps, { logger: false, consoleDir: dir });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the page, a client-side route, an asset and the icon carry the policy and its companions', async () => {
    for (const url of ['/', '/instances', '/account/security', '/assets/a-1234.js', '/favicon.svg']) {
      const r = await app.inject({ method: 'GET', url });
      expect(r.statusCode, url).toBe(200);
      const csp = String(r.headers['content-security-policy']);
      const directives = new Map(
        csp.split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name!, values.join(' ')] as const;
        }),
      );
      expect(directives.get('default-src'), url).toBe("'self'");
      expect(directives.get('script-src'), url).toBe("'self'");
      expect(directives.get('style-src'), url).toBe("'self'");
      expect(directives.get('object-src'), url).toBe("'none'");
      expect(directives.get('base-uri'), url).toBe("'self'");
      expect(directives.get('form-action'), url).toBe("'self'");
      expect(directives.get('frame-ancestors'), url).toBe("'none'");
      expect(csp, url).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
      expect(r.headers['x-frame-options'], url).toBe('DENY');
      expect(r.headers['x-content-type-options'], url).toBe('nosniff');
      expect(r.headers['referrer-policy'], url).toBe('same-origin');
    }
  });

  it('API replies, answered or refused, are never sniffed as another type', async () => {
    const u = await t().user();
    for (const [url, key, status] of [
      ['/api/v0/users/current/', u.apiKey, 200],
      ['/api/v0/users/current/', null, 401],
      ['/api/v0/no-such-route', u.apiKey, 404],
      ['/healthz', null, 200],
    ] as const) {
      const r = await app.inject({
        method: 'GET',
        url,
        headers: key ? { authorization: `Bearer ${key}` } : {},
      });
      expect(r.statusCode, url).toBe(status);
      expect(r.headers['x-content-type-options'], url).toBe('nosniff');
    }
  });
});
