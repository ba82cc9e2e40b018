// Offer search is served from an in-memory index per process (offers/offers.index.ts),
// which must be exactly as fresh as the database. Every machine row gets a version that moves
// whenever a search-relevant column changes, so a reader can fetch "rows changed since I last
// looked" through an index instead of reloading the table. Forward-only.
//
// - SQLite: writers are serialised by the database lock, so one global monotonic counter is exact:
//   triggers set row_version = max(row_version) + 1 (read through the index on it). A reader that
//   has seen every version up to N sees later commits as versions > N.
// - PostgreSQL: a shared counter row would deadlock transactions that touch several machines with
//   ones that touch one, and sequence values are not handed out in commit order. So the version
//   comes from a sequence (a cheap, non-transactional increment) and each row also records the
//   transaction that wrote it (row_xid). A reader remembers the snapshot of its last read and next
//   fetches the rows whose writer was not visible in that snapshot (see offers.index.ts).
//
// Heartbeats rewrite last_heartbeat_at every few seconds on every machine and must not bump the
// version (they would make every reader refetch every machine). Search only cares whether
// last_heartbeat_at is null (`rentable`: a machine that never heartbeated is not "offline"), so
// that nullness is part of the compared columns; the value itself is not.
//
// Machines are only ever soft-deleted (deleted_at); a hard DELETE would not be seen by readers.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

/**
 * Every machines column whose change bumps row_version: all of them except last_heartbeat_at
 * (see above), row_version/row_xid themselves, and `score` (generated from price_gpu_dph,
 * num_gpus, dlperf and reliability, which are listed; PostgreSQL refuses NEW.<generated column>
 * in a BEFORE trigger's WHEN). A migration that adds a machines column search reads must
 * recreate the UPDATE trigger with it (createVersionUpdateTrigger; 017 added maint_until).
 */
export const VERSIONED_COLUMNS = [
  'id',
  'host_id',
  'hostname',
  'gpu_name',
  'num_gpus',
  'gpu_ram',
  'cpu_name',
  'cpu_cores',
  'cpu_ghz',
  'cpu_ram',
  'disk_space',
  'disk_bw',
  'inet_up',
  'inet_down',
  'pcie_bw',
  'direct_port_count',
  'cuda_max_good',
  'driver_version',
  'reliability',
  'verified',
  'geolocation',
  'dlperf',
  'listed',
  'price_gpu_dph',
  'price_disk_gb_month',
  'min_bid_dph',
  'rented',
  'disk_held_mb',
  'listed_until',
  'online_state',
  'created_at',
  'deleted_at',
  'agent_uid',
  'agent_slot',
] as const;

/** The compared values of one row image (`OLD` or `NEW`). */
function rowImage(ref: 'OLD' | 'NEW', columns: readonly string[]): string[] {
  return [...columns.map((c) => `${ref}.${c}`), `(${ref}.last_heartbeat_at IS NULL)`];
}

/** SQLite's statement: the row's version moves to the next of the global counter. */
const SQLITE_BUMP =
  'UPDATE machines SET row_version = (SELECT coalesce(max(row_version), 0) + 1 FROM machines) WHERE id = NEW.id;';

/**
 * (Re)creates the UPDATE trigger that moves a machine's version when one of `columns` (or the
 * nullness of last_heartbeat_at) changes. The INSERT trigger and the PostgreSQL function stay.
 */
export async function createVersionUpdateTrigger(
  db: Kysely<any>,
  d: SqlDialect,
  columns: readonly string[],
): Promise<void> {
  if (d.name === 'postgres') {
    const changed = `((${rowImage('OLD', columns).join(', ')}) IS DISTINCT FROM (${rowImage('NEW', columns).join(', ')}))`;
    await sql`DROP TRIGGER IF EXISTS machines_row_version_upd ON machines`.execute(db);
    await sql
      .raw(
        `CREATE TRIGGER machines_row_version_upd BEFORE UPDATE ON machines FOR EACH ROW WHEN ${changed} EXECUTE FUNCTION machines_row_version()`,
      )
      .execute(db);
    return;
  }
  const oldImg = rowImage('OLD', columns);
  const newImg = rowImage('NEW', columns);
  const changed = oldImg.map((o, i) => `${o} IS NOT ${newImg[i]}`).join(' OR ');
  await sql`DROP TRIGGER IF EXISTS machines_row_version_upd`.execute(db);
  await sql
    .raw(
      `CREATE TRIGGER machines_row_version_upd AFTER UPDATE ON machines FOR EACH ROW WHEN ${changed} BEGIN ${SQLITE_BUMP} END`,
    )
    .execute(db);
}

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  if (d.name === 'postgres') return upPostgres(db, d);
  await sql`ALTER TABLE machines ADD COLUMN row_version bigint NOT NULL DEFAULT 0`.execute(db);
  // Existing rows: distinct versions (ids are distinct), so the counter continues above them.
  await sql`UPDATE machines SET row_version = id`.execute(db);
  await sql`CREATE INDEX machines_row_version_idx ON machines (row_version)`.execute(db);
  // The trigger's own UPDATE changes row_version only, so it does not fire the UPDATE trigger.
  await sql
    .raw(
      `CREATE TRIGGER machines_row_version_ins AFTER INSERT ON machines FOR EACH ROW BEGIN ${SQLITE_BUMP} END`,
    )
    .execute(db);
  await createVersionUpdateTrigger(db, d, VERSIONED_COLUMNS);
}

async function upPostgres(db: Kysely<any>, d: SqlDialect): Promise<void> {
  // Unqualified names: the sequence and function land in the connection's current schema, like
  // the tables (operators may give each deployment, and tests each file, its own schema).
  await sql`CREATE SEQUENCE machines_row_version_seq`.execute(db);
  await sql`ALTER TABLE machines ADD COLUMN row_version bigint NOT NULL DEFAULT 0, ADD COLUMN row_xid xid8`.execute(
    db,
  );
  await sql`UPDATE machines SET row_version = nextval('machines_row_version_seq'), row_xid = pg_current_xact_id()`.execute(
    db,
  );
  await sql`CREATE INDEX machines_row_version_idx ON machines (row_version)`.execute(db);
  await sql`CREATE INDEX machines_row_xid_idx ON machines (row_xid)`.execute(db);
  // The function finds the sequence in the schema of the table that fired it (not through the
  // caller's search_path, which may name another schema). pg_current_xact_id() is the top-level
  // transaction, the one a snapshot lists as in progress or visible.
  await sql
    .raw(
      `CREATE FUNCTION machines_row_version() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  NEW.row_version := nextval(format('%I.machines_row_version_seq', TG_TABLE_SCHEMA)::regclass);
  NEW.row_xid := pg_current_xact_id();
  RETURN NEW;
END
$fn$`,
    )
    .execute(db);
  await sql`CREATE TRIGGER machines_row_version_ins BEFORE INSERT ON machines FOR EACH ROW EXECUTE FUNCTION machines_row_version()`.execute(
    db,
  );
  await createVersionUpdateTrigger(db, d, VERSIONED_COLUMNS);
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
