// What services need, visible in their signatures. Built once in main.ts (or
// by a test) and passed down; no module-level singletons.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Clock } from './clock.js';
import type { Dialect, Store } from './db/connection.js';
import type { DB } from './db/schema.js';

export interface Deps {
  store: Store;
  db: Kysely<DB>;
  dialect: Dialect;
  clock: Clock;
  config: Config;
  log: Logger;
  /** Wakes the e-mail relay after a commit that enqueued mail (no-op when none runs). */
  kickOutbox: () => void;
  /** Background loops started by main.ts; tests leave this empty and call the jobs directly. */
  jobs: { stop(): Promise<void> }[];
  /** Seams other modules register (SMS sender, agent transport …), keyed by name. */
  seams: Record<string, unknown>;
}

export function makeDeps(
  p: Omit<Deps, 'db' | 'dialect' | 'kickOutbox' | 'jobs' | 'seams'> &
    Partial<Pick<Deps, 'kickOutbox' | 'seams'>>,
): Deps {
  return {
    ...p,
    db: p.store.db,
    dialect: p.store.dialect,
    kickOutbox: p.kickOutbox ?? (() => {}),
    jobs: [],
    seams: p.seams ?? {},
  };
}
