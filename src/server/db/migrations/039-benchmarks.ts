// Benchmarks and verification that follows the hardware.
// - machine_benchmarks: one row per measurement of one run of the agent's benchmarks (name, the
//   model it measured, its score and unit), with the agent's version and the run's time; a run's
//   rows share run_at. `search benchmarks` lists them; the newest run's figures are copied onto
//   the machine (its offer fields).
// - machine_verifications: every change of a machine's verification (unverified, verified,
//   deverified) with its reason and who made it (an operator or a rule).
// - machines: the figures a benchmark measures that the offer search did not have yet, the
//   verification as a state of three (`verified` stays 1 exactly when it is 'verified'), and when
//   it last changed and when the last benchmark ran. Every new column search reads is versioned.
// Forward-only.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';
import { createVersionUpdateTrigger, VERSIONED_COLUMNS } from './007-offer-index.js';

/** The machines columns this migration adds that search reads (versioned like the others). */
export const BENCHMARK_COLUMNS = [
  'gpu_mem_bw',
  'total_flops',
  'pci_gen',
  'compute_cap',
  'cpu_arch',
  'has_avx',
  'ubuntu_version',
  'gpu_arch',
  'gpu_max_power',
  'gpu_max_temp',
  'gpu_display_active',
  'bw_nvlink',
  'mobo_name',
  'static_ip',
  'verification',
] as const;

/**
 * Every column the UPDATE trigger versions after this migration: a later migration that adds a
 * versioned column recreates the trigger with these and its own.
 */
export const VERSIONED_COLUMNS_039 = [
  ...VERSIONED_COLUMNS,
  'maint_until',
  'bid_to_win_dph',
  ...BENCHMARK_COLUMNS,
] as const;

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const real = (name: string) =>
    db.schema
      .alterTable('machines')
      .addColumn(name, 'double precision', (c) => c.notNull().defaultTo(0))
      .execute();
  const int = (name: string) =>
    db.schema
      .alterTable('machines')
      .addColumn(name, 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  const text = (name: string, def = '') =>
    db.schema
      .alterTable('machines')
      .addColumn(name, 'text', (c) => c.notNull().defaultTo(def))
      .execute();
  await real('gpu_mem_bw');
  await real('total_flops');
  await real('pci_gen');
  await int('compute_cap');
  await text('cpu_arch');
  await int('has_avx');
  await text('ubuntu_version');
  await text('gpu_arch');
  await real('gpu_max_power');
  await real('gpu_max_temp');
  await int('gpu_display_active');
  await real('bw_nvlink');
  await text('mobo_name');
  await int('static_ip');
  await text('verification', 'unverified');
  await db.schema.alterTable('machines').addColumn('verification_changed_at', 'bigint').execute();
  await db.schema.alterTable('machines').addColumn('benchmarked_at', 'bigint').execute();
  await createVersionUpdateTrigger(db, d, VERSIONED_COLUMNS_039);
  await sql`UPDATE machines SET verification = 'verified' WHERE verified = 1`.execute(db);

  await d
    .withId(db.schema.createTable('machine_benchmarks'))
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('score', 'double precision', (c) => c.notNull())
    .addColumn('unit', 'text', (c) => c.notNull())
    .addColumn('num_gpus', 'integer', (c) => c.notNull())
    .addColumn('agent_version', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('machine_benchmarks_machine_idx')
    .on('machine_benchmarks')
    .columns(['machine_id', 'run_at'])
    .execute();

  await d
    .withId(db.schema.createTable('machine_verifications'))
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('from_state', 'text', (c) => c.notNull())
    .addColumn('to_state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    // 'rule' (benchmarks, re-registration, failed starts, OPENRIG_AUTO_VERIFY) or 'operator'.
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('machine_verifications_machine_idx')
    .on('machine_verifications')
    .columns(['machine_id', 'id'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
