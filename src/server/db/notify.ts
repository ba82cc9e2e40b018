// Notifications between the processes that serve one database: on PostgreSQL its own
// LISTEN/NOTIFY (every process, on any host, that listens on a channel hears every NOTIFY on it,
// its own included, once the notifying transaction commits). SQLite has none: a cluster's workers
// pass theirs through the primary instead (cluster.ts), and one process needs none.
import type Pg from 'pg';
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { lazyRequire } from '../../contract/lazy-require.js';
import type { Store } from './connection.js';

export interface Notifications {
  /** Sends `payload` to every listener of `topic` (at most 7,000 bytes). */
  notify(topic: string, payload: string): Promise<void>;
  /**
   * Hears `topic` on a connection of its own, kept open (and opened again after it dropped, a
   * second later): resolves once listening. Notifications sent while it was not are not heard.
   */
  listen(topic: string, onPayload: (payload: string) => void): Promise<void>;
  /** Ends the listening connection. */
  close(): Promise<void>;
}

const pgDriver = lazyRequire<typeof Pg>('pg');

/** How long after a dropped listening connection it is opened again. */
const RECONNECT_MS = 1000;

/**
 * The store's notifications, or null where the database has none (SQLite). A topic is per
 * schema: deployments (and test files) sharing one PostgreSQL database in schemas of their own
 * do not hear each other.
 */
export function storeNotifications(store: Store, databaseUrl: string): Notifications | null {
  if (store.dialect.name !== 'postgres') return null;
  let schema: Promise<string> | null = null;
  const channel = async (topic: string) => {
    schema ??= sql<{ s: string }>`select current_schema() as s`
      .execute(store.db)
      .then((r) => r.rows[0]?.s ?? 'public');
    const s = await schema.catch((err: unknown) => {
      schema = null;
      throw err;
    });
    return `openrig_${topic}_${createHash('sha1').update(s).digest('hex').slice(0, 12)}`;
  };
  let client: Pg.Client | null = null;
  let closed = false;
  let listening: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  /** One listening connection; when it fails or drops, another a second later. */
  const open = (name: string, onPayload: (payload: string) => void): Promise<void> => {
    const c = new (pgDriver().Client)({ connectionString: databaseUrl });
    let dropped = false;
    const drop = () => {
      if (dropped) return;
      dropped = true;
      if (client === c) client = null;
      c.end().catch(() => {});
      if (closed) return;
      timer = setTimeout(() => {
        listening = open(name, onPayload);
        listening.catch(() => {}); // tried again when it drops
      }, RECONNECT_MS);
    };
    c.on('error', drop);
    c.on('end', drop);
    c.on('notification', (n) => {
      if (n.channel === name && n.payload !== undefined) onPayload(n.payload);
    });
    client = c;
    return c
      .connect()
      .then(() => c.query(`LISTEN "${name}"`))
      .then(
        () => {},
        (err: unknown) => {
          drop();
          throw err;
        },
      );
  };
  return {
    async notify(topic, payload) {
      await sql`select pg_notify(${await channel(topic)}, ${payload})`.execute(store.db);
    },
    listen(topic, onPayload) {
      listening ??= channel(topic).then(
        (name) => open(name, onPayload),
        (err: unknown) => {
          listening = null;
          throw err;
        },
      );
      return listening;
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
