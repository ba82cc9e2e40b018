import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('machines'))
    .addColumn('host_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('hostname', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('gpu_name', 'text', (c) => c.notNull())
    .addColumn('num_gpus', 'integer', (c) => c.notNull())
    .addColumn('gpu_ram', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cpu_name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('cpu_cores', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cpu_ghz', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('cpu_ram', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('disk_space', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('disk_bw', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('inet_up', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('inet_down', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('pcie_bw', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('direct_port_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cuda_max_good', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('driver_version', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('reliability', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('verified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('geolocation', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('dlperf', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('listed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('price_gpu_dph', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('price_disk_gb_month', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('min_bid_dph', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('rented', 'integer', (c) => c.notNull().defaultTo(0))
    // Disk (MB) held by the machine's live instances, stopped ones included: search shows
    // disk_space less this, without a per-row subquery.
    .addColumn('disk_held_mb', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('listed_until', 'bigint')
    // The default search order (score desc) reads this stored column through an index instead of
    // computing it for every machine: dlperf per on-demand $/h, weighted by reliability.
    .addColumn('score', 'double precision', (c) =>
      c
        .generatedAlwaysAs(
          sql`(case when price_gpu_dph * num_gpus > 0 then dlperf / (price_gpu_dph * num_gpus) else 0 end) * reliability`,
        )
        .stored(),
    )
    .addColumn('online_state', 'text', (c) => c.notNull().defaultTo('offline'))
    .addColumn('last_heartbeat_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('machines_host_idx').on('machines').column('host_id').execute();
  // Search (POST /bundles): the default order walks the score index and stops at the limit; a
  // GPU-model filter narrows through its own index. (An index on listed/rented would not help:
  // most machines are listed and unrented, and it lures the planner off the score order.)
  await db.schema.createIndex('machines_score_idx').on('machines').column('score').execute();
  await db.schema.createIndex('machines_gpu_idx').on('machines').columns(['gpu_name', 'num_gpus']).execute();

  await d
    .withId(db.schema.createTable('instances'))
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('team_id', 'bigint')
    .addColumn('image', 'text', (c) => c.notNull())
    .addColumn('disk', 'double precision', (c) => c.notNull())
    .addColumn('onstart', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('env', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('label', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('runtype', 'text', (c) => c.notNull().defaultTo('ssh'))
    .addColumn('args', 'text')
    .addColumn('is_bid', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('dph_compute', 'double precision', (c) => c.notNull())
    .addColumn('dph_disk', 'double precision', (c) => c.notNull())
    .addColumn('intended_status', 'text', (c) => c.notNull().defaultTo('running'))
    .addColumn('actual_status', 'text')
    .addColumn('status_msg', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('ssh_host', 'text')
    .addColumn('ssh_port', 'integer')
    .addColumn('ports', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('start_date', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('destroyed_at', 'bigint')
    .addColumn('accrued_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('billed_until', 'bigint', (c) => c.notNull())
    .addColumn('image_login_enc', 'text')
    .addColumn('extra', 'text')
    .execute();
  // No double-rented machine: at most one ACTIVE instance per machine (active = not destroyed and
  // not stopped), decided by the database. A stopped instance releases its machine (its data stays
  // on the host and its disk keeps billing), so a machine may hold many stopped instances of
  // several clients besides its one active instance. The `machines.rented` flag is kept in step
  // by conditional updates (create/start claim it, stop/destroy of the active one release it);
  // this partial unique index backs it. (Both SQLite and PostgreSQL have partial indexes.) The
  // index keeps its first name: test/helpers/maintenance.ts refers to it.
  await db.schema
    .createIndex('instances_one_live_per_machine')
    .unique()
    .on('instances')
    .column('machine_id')
    .where(sql.ref('destroyed_at'), 'is', null)
    .where(sql.ref('intended_status'), '<>', 'stopped')
    .execute();
  // The instances of a machine (the agent's desired state, maintenance notices).
  await db.schema
    .createIndex('instances_machine_idx')
    .on('instances')
    .columns(['machine_id', 'id'])
    .execute();
  await db.schema.createIndex('instances_user_idx').on('instances').columns(['user_id', 'id']).execute();
  // The billing meter walks live instances.
  await db.schema
    .createIndex('instances_live_idx')
    .on('instances')
    .columns(['destroyed_at', 'billed_until'])
    .execute();

  await d
    .withId(db.schema.createTable('instance_ssh_keys'))
    .addColumn('instance_id', 'bigint', (c) => c.notNull().references('instances.id'))
    .addColumn('ssh_key_id', 'bigint', (c) => c.notNull().references('ssh_keys.id'))
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // Attaching the same key twice is harmless: the index keeps one row.
  await db.schema
    .createIndex('instance_ssh_keys_uq')
    .unique()
    .on('instance_ssh_keys')
    .columns(['instance_id', 'ssh_key_id'])
    .execute();

  await d
    .withId(db.schema.createTable('idempotency_keys'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('idem_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'bigint', (c) => c.notNull())
    .addColumn('response_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // Two concurrent creates with one key: the second insert waits for the first and then fails.
  await db.schema
    .createIndex('idempotency_keys_uq')
    .unique()
    .on('idempotency_keys')
    .columns(['user_id', 'idem_key'])
    .execute();

  await d
    .withId(db.schema.createTable('billing_ledger'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('instance_id', 'bigint')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('amount_micros', 'bigint', (c) => c.notNull())
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('period_end', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('billing_ledger_user_idx')
    .on('billing_ledger')
    .columns(['user_id', 'id'])
    .execute();
  await db.schema
    .createIndex('billing_ledger_instance_idx')
    .on('billing_ledger')
    .columns(['instance_id', 'id'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
