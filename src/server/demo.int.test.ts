// `serve --demo` restarts print the same demo key instead of minting another and leaving the
// old ones valid; a lost or revoked stored key is replaced by one key, the old ones revoked.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeEachDb } from '../../test/helpers/db.js';
import { useTestApp } from '../../test/helpers/app.js';
import { DEMO_EMAIL, ensureDemoUser } from './demo.js';
import { resolveCredential } from './http/auth.js';

describeEachDb('demo key across restarts', (dialect) => {
  const t = useTestApp(dialect);

  it('a restart reuses the key; a lost key file means one new key and the old ones revoked', async () => {
    const server = { deps: t().deps };
    const first = await ensureDemoUser(server);
    const again = await ensureDemoUser(server);
    expect(again).toEqual(first);
    const live = () =>
      t()
        .deps.db.selectFrom('api_keys as k')
        .innerJoin('users as u', 'u.id', 'k.user_id')
        .select('k.id')
        .where('u.email', '=', DEMO_EMAIL)
        .where('k.revoked_at', 'is', null)
        .execute();
    expect(await live()).toHaveLength(1);

    rmSync(path.join(t().config.dataDir, 'demo', 'keys.json'));
    const fresh = await ensureDemoUser(server);
    expect(fresh.apiKey).not.toBe(first.apiKey);
    expect(await resolveCredential(t().deps, first.apiKey)).toBeNull();
    expect(await live()).toHaveLength(1);
    expect((await ensureDemoUser(server)).apiKey).toBe(fresh.apiKey);
  });
});
