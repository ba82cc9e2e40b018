// The official CLI's commands that reach openrig but can never work there: `self-test machine`'s
// rental of the marketplace's test image is refused before anything is written or billed, and the
// serverless calls the CLI sends to the server's root (not /api/v0) answer not_supported too.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter } from '../helpers/market.js';
import { cli, cliCreateBody, f } from './official-cli.js';

describeEachDb('official CLI: self-test machine and the serverless root calls', (dialect) => {
  const t = useTestApp(dialect);

  it('self-test machine: the create of the test image is a 400 not_supported; no instance, no charge', async () => {
    const u = await renter(t());
    const [offer] = await offers(t(), 1);
    const count = async () => ({
      instances: (await t().deps.db.selectFrom('instances').select('id').execute()).length,
      ledger: (await t().deps.db.selectFrom('billing_ledger').select('id').execute()).length,
      rented: (
        await t().deps.db.selectFrom('machines').select('rented').where('id', '=', offer!).executeTakeFirst()
      )?.rented,
    });
    const before = await count();
    for (const image of ['vastai/test:self-test-cuda-12.8', 'docker.io/vastai/test:self-test-cuda-11.8']) {
      // The create `vastai self-test machine ID` sends: jupyter with direct ports, the test
      // image, a 40 GB disk, the verification script as onstart, ports 5000 and 1234.
      const r = await cli(t(), {
        method: 'PUT',
        path: `/asks/${offer}/`,
        key: u.apiKey,
        json: cliCreateBody({
          image,
          disk: f(40),
          onstart: '/verification/remote.sh',
          runtype: 'jupyter_direc ssh_direc ssh_proxy',
          env: { TZ: 'PDT', XNAME: 'XX4', '-p 5000:5000': '1', '-p 1234:1234': '1' },
        }),
      });
      expect(r.status, image).toBe(400);
      expect(r.body.error).toBe('not_supported');
      expect(r.body.msg).toContain('"self-test machine"');
      expect(r.body.msg).toContain('test image');
    }
    expect(await count()).toEqual(before);
    // Another image of the same repository, or a lookalike, rents as usual.
    const ok = await cli(t(), {
      method: 'PUT',
      path: `/asks/${offer}/`,
      key: u.apiKey,
      json: cliCreateBody({ image: 'example/vastai-test:self-test' }),
    });
    expect(ok.status).toBe(200);
    expect(ok.body.success).toBe(true);
  });

  it('get endpt-logs, get wrkgrp-logs, update workers: their root calls answer 400 not_supported', async () => {
    const u = await renter(t());
    const calls = [
      ['/get_endpoint_logs/', 'get endpt-logs', { id: 382, api_key: u.apiKey, tail: 100 }],
      ['/get_autogroup_logs/', 'get wrkgrp-logs', { id: 382, api_key: u.apiKey }],
      [
        '/update_workers/',
        'update workers',
        { workergroup_id: 4242, api_key: u.apiKey, cancel_update: true },
      ],
    ] as const;
    for (const [path, command, json] of calls) {
      // `--url https://rig.example.com/` (a trailing slash) doubles the slash before the path.
      for (const p of [path, `/${path}`]) {
        const r = await cli(t(), { method: 'POST', path: p, root: true, key: u.apiKey, json });
        expect(r.status, p).toBe(400);
        expect(r.contentType).toBe('application/json');
        expect(r.body.error).toBe('not_supported');
        expect(r.body.msg).toContain(`"${command}"`);
      }
    }
  });
});
