// The database's notifications between processes: two stores on one database stand for two
// `serve` processes (or two workers). A wake sent through one reaches the other's listener; a
// dropped listening connection is opened again. A database without notifications (SQLite) has
// none to offer: its processes use the cluster's IPC (cluster.ts).
import { expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDb, describeEachDb } from '../../../test/helpers/db.js';
import { openStore } from './connection.js';
import { storeNotifications } from './notify.js';
import { AgentWake, notificationsRelay } from '../modules/agent-gateway/agent-gateway.wake.js';
import { waitFor } from '../../../test/helpers/process.js';

describeEachDb('notifications between processes', (dialect) => {
  it("wake an agent's wait held by another process, within a moment, and only its machines'", async () => {
    const db = await createTestDb(dialect);
    const other = openStore(db.url);
    try {
      const here = storeNotifications(db.store, db.url);
      const there = storeNotifications(other, db.url);
      if (dialect === 'sqlite') {
        expect(here).toBeNull(); // the cluster's IPC carries them instead
        return;
      }
      const a = new AgentWake();
      const b = new AgentWake();
      a.useRelay(notificationsRelay(here!));
      b.useRelay(notificationsRelay(there!));
      await b.hear();
      const held = b.wait([7, 8], 10_000);
      const other9 = b.wait([9], 1500);
      const t0 = Date.now();
      a.notify([8]);
      expect(await held.woken).toBe(true);
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(await other9.woken).toBe(false);

      // The listening connection dropped (PostgreSQL restarted, a proxy cut it): heard again soon.
      await sql`select pg_terminate_backend(pid) from pg_stat_activity
        where query like 'LISTEN %' and pid <> pg_backend_pid() and datname = current_database()`.execute(
        db.store.db,
      );
      await waitFor(
        async () => {
          const w = b.wait([7], 300);
          a.notify([7]);
          return w.woken;
        },
        'the listener to be back',
        10_000,
        200,
      );
      await a.close();
      await b.close();
    } finally {
      await other.destroy();
      await db.cleanup();
    }
  });
});
