// One migration set for both dialects, run at start. The list is static so
// it works the same from TypeScript sources (tests) and from dist/ (the installed program).
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { DB } from './schema.js';
import type { Store } from './connection.js';
import type { SqlDialect } from './dialect.js';
import * as m001 from './migrations/001-foundation.js';
import * as m002 from './migrations/002-market.js';
import * as m003 from './migrations/003-maintenance.js';
import * as m004 from './migrations/004-two-factor.js';
import * as m005 from './migrations/005-agent.js';
import * as m006 from './migrations/006-platform.js';
import * as m007 from './migrations/007-offer-index.js';
import * as m008 from './migrations/008-unlogged-counters.js';
import * as m009 from './migrations/009-live-instances-index.js';
import * as m010 from './migrations/010-session-origin.js';
import * as m011 from './migrations/011-webhooks.js';
import * as m012 from './migrations/012-agent-public-host.js';
import * as m013 from './migrations/013-account-lockouts.js';
import * as m014 from './migrations/014-api-key-given-permissions.js';
import * as m015 from './migrations/015-instance-ssh-keys.js';
import * as m016 from './migrations/016-instance-requests.js';
import * as m017 from './migrations/017-machine-maint-until.js';
import * as m018 from './migrations/018-instance-running-since.js';
import * as m019 from './migrations/019-instance-usage.js';
import * as m020 from './migrations/020-templates.js';
import * as m021 from './migrations/021-env-vars.js';
import * as m022 from './migrations/022-audit.js';
import * as m023 from './migrations/023-account-profile.js';
import * as m024 from './migrations/024-instance-config-generation.js';
import * as m025 from './migrations/025-ledger-period-index.js';
import * as m026volumes from './migrations/026-volumes.js';
import * as m027marketBids from './migrations/027-market-bids.js';
import * as m028billingDeposits from './migrations/028-billing-deposits.js';
import * as m029machineRuntime from './migrations/029-machine-runtime.js';
import * as m030usageHistory from './migrations/030-usage-history.js';
import * as m031accountTokens from './migrations/031-account-tokens.js';
import * as m032billingPayouts from './migrations/032-billing-payouts.js';
import * as m033teams from './migrations/033-teams.js';
import * as m034quotas from './migrations/034-quotas.js';
import * as m035sso from './migrations/035-sso.js';
import * as m036copies from './migrations/036-copies.js';
import * as m037scheduledJobs from './migrations/037-scheduled-jobs.js';
import * as m038gateway from './migrations/038-gateway.js';
import * as m039benchmarks from './migrations/039-benchmarks.js';
import * as m040trust from './migrations/040-trust.js';
import * as m041payouts from './migrations/041-payouts.js';
import * as m042machineVolumeMethod from './migrations/042-machine-volume-method.js';
import * as m043volumeClones from './migrations/043-volume-clones.js';
import * as m044machineClaims from './migrations/044-machine-claims.js';
import { textOf } from '../../contract/text.js';

/** A migration: its forward step, given the dialect it runs on (one set for both databases). */
export interface Step {
  up(db: Kysely<any>, d: SqlDialect): Promise<void>;
  down(): Promise<void>;
}

const steps: Record<string, Step> = {
  '001-foundation': m001,
  '002-market': m002,
  '003-maintenance': m003,
  '004-two-factor': m004,
  '005-agent': m005,
  '006-platform': m006,
  '007-offer-index': m007,
  '008-unlogged-counters': m008,
  '009-live-instances-index': m009,
  '010-session-origin': m010,
  '011-webhooks': m011,
  '012-agent-public-host': m012,
  '013-account-lockouts': m013,
  '014-api-key-given-permissions': m014,
  '015-instance-ssh-keys': m015,
  '016-instance-requests': m016,
  '017-machine-maint-until': m017,
  '018-instance-running-since': m018,
  '019-instance-usage': m019,
  '020-templates': m020,
  '021-env-vars': m021,
  '022-audit': m022,
  '023-account-profile': m023,
  '024-instance-config-generation': m024,
  '025-ledger-period-index': m025,
  '026-volumes': m026volumes,
  '027-market-bids': m027marketBids,
  '028-billing-deposits': m028billingDeposits,
  '029-machine-runtime': m029machineRuntime,
  '030-usage-history': m030usageHistory,
  '031-account-tokens': m031accountTokens,
  '032-billing-payouts': m032billingPayouts,
  '033-teams': m033teams,
  '034-quotas': m034quotas,
  '035-sso': m035sso,
  '036-copies': m036copies,
  '037-scheduled-jobs': m037scheduledJobs,
  '038-gateway': m038gateway,
  '039-benchmarks': m039benchmarks,
  '040-trust': m040trust,
  '041-payouts': m041payouts,
  '042-machine-volume-method': m042machineVolumeMethod,
  '043-volume-clones': m043volumeClones,
  '044-machine-claims': m044machineClaims,
};

function providerFor(d: SqlDialect, only?: Record<string, Step>): MigrationProvider {
  const migrations: Record<string, Migration> = {};
  for (const [name, step] of Object.entries(only ?? steps))
    migrations[name] = { up: (db) => step.up(db, d), down: () => step.down() };
  return { getMigrations: () => Promise.resolve(migrations) };
}

/** Brings the database to the latest migration; `only` replaces the migration set (tests). */
export async function migrateToLatest(store: Store, only?: Record<string, Step>): Promise<void> {
  // On PostgreSQL the bookkeeping tables go into the connection's current schema explicitly:
  // Kysely otherwise looks for them in every schema and may find another database's in the same
  // cluster (operators may give each deployment, and tests each file, its own schema).
  let migrationTableSchema: string | undefined;
  if (store.dialect.name === 'postgres') {
    const r = await sql<{ s: string }>`select current_schema() as s`.execute(store.db);
    migrationTableSchema = r.rows[0]?.s;
  }
  const db = migrationTableSchema ? withSchemaIntrospection(store.db) : withTransactionalDdl(store.db);
  const migrator = new Migrator({ db, provider: providerFor(store.dialect, only), migrationTableSchema });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(textOf(error));
}

/**
 * SQLite: every pending migration in one transaction, as on PostgreSQL. Kysely runs SQLite's DDL
 * outside a transaction, so each statement commits alone, and with synchronous=FULL each commit
 * waits for its fsync: a fresh database's migrations took about 150 ms, most of `serve`'s
 * primary's start-up on its critical path. SQLite's DDL is transactional (no migration here sets a
 * PRAGMA or vacuums, which a transaction would refuse), so one commit does it, and a migration
 * that fails leaves the database as it was instead of half changed.
 */
function withTransactionalDdl(db: Kysely<DB>): Kysely<DB> {
  const executor = db.getExecutor();
  const adapter = new Proxy(executor.adapter, {
    get: (target, prop) =>
      prop === 'supportsTransactionalDdl' ? true : (Reflect.get(target, prop, target) as unknown),
  });
  const exec = new Proxy(executor, {
    get(target, prop) {
      if (prop === 'adapter') return adapter;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'getExecutor') return () => exec;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * PostgreSQL: the Migrator asks Kysely's introspector whether its tables exist, and that lists
 * every table of every schema, calling catalog functions on each. Racing another deployment's (or
 * test file's) DROP SCHEMA or ALTER TABLE in the same database, it failed now and then with
 * "schema … does not exist" or "relation t_….ssh_keys does not exist". Here the Migrator sees an
 * introspector that reads pg_namespace and pg_class of the current schema only, plain catalog
 * scans that a concurrent DDL elsewhere cannot break.
 */
function withSchemaIntrospection(db: Kysely<DB>): Kysely<DB> {
  const getTables = async () =>
    (
      await sql<{
        name: string;
        schema: string;
      }>`select c.relname as name, n.nspname as schema from pg_catalog.pg_class c
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = current_schema() and c.relkind in ('r', 'p')`.execute(db)
    ).rows.map((r) => ({ name: r.name, schema: r.schema, isView: false, columns: [] }));
  const introspection = {
    getSchemas: async () =>
      (await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(db)).rows,
    getTables,
    getMetadata: async () => ({ tables: await getTables() }),
  };
  // Kysely keeps its state in private fields: methods must run on the real instance.
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'introspection') return introspection;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
