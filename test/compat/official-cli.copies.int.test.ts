// The official CLI's `copy` and `cancel copy` as it builds them (docs/data.md): `copy A:/p B:/p`
// sends PUT /commands/copy_direct/ with the ids as it parsed them ("12", "C.12"); `copy
// local:p ID:/p` sends the same URL with "local" and reads dst_addr/dst_port; `copy p ID:/p` (no
// prefix) sends PUT /commands/rsync/ with null; `cancel copy DST` sends DELETE with dst_id. The
// `vm copy` command (commented out in the CLI) would send copy's request. The fields read: success,
// msg, and the address and port of the instance's SSH server. The end-to-end run with real agents
// and rsync is test/e2e/agent-copies.test.ts.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter, runningInstance } from '../helpers/market.js';

describeEachDb('official CLI: copy, cancel copy', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('copy between instances, to and from a laptop, and cancel copy', async () => {
    const u = await renter(t());
    const [m1, m2] = await offers(t(), 2);
    const a = await runningInstance(t(), u.apiKey, m1!);
    const b = await runningInstance(t(), u.apiKey, m2!);
    await t().deps.db.updateTable('machines').set({ online_state: 'online' }).execute();
    await t().deps.db.updateTable('instances').set({ ssh_port: 41022, ssh_host: '10.0.0.5' }).execute();
    const headers = { 'content-type': 'application/json' };
    const call = (method: 'PUT' | 'DELETE', url: string, body: unknown) =>
      t().request(method, url, { key: u.apiKey, body, headers });
    // copy 6003036:/workspace/ C.6003038:/workspace/
    const direct = await call('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: String(a),
      dst_id: `C.${b}`,
      src_path: '/workspace/',
      dst_path: '/workspace/',
    });
    expect(direct.status).toBe(200);
    expect(direct.body.success).toBe(true);
    // copy local:data/test C.ID:/data/test (the CLI keeps copy_direct's URL for "local")
    const up = await call('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: 'local',
      dst_id: `C.${a}`,
      src_path: 'data/test',
      dst_path: '/data/test',
    });
    expect(up.body).toMatchObject({ success: true, dst_addr: '10.0.0.5', dst_port: 41022 });
    // copy ID:/data data (no prefix: rsync's URL, the local id null)
    const down = await call('PUT', '/api/v0/commands/rsync/', {
      client_id: 'me',
      src_id: String(a),
      dst_id: null,
      src_path: '/data',
      dst_path: 'data',
    });
    expect(down.body).toMatchObject({ success: true, src_addr: '10.0.0.5', src_port: 41022 });
    // cancel copy ID
    const cancel = await call('DELETE', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      dst_id: String(b),
    });
    expect(cancel.status).toBe(200);
    expect(cancel.body.success).toBe(true);
    expect(typeof cancel.body.msg).toBe('string');
    const none = await call('DELETE', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      dst_id: String(b),
    });
    expect(none.body.success).toBe(false);
    expect(none.body.msg).toMatch(/No copy/);
  });
});
