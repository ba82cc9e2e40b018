// machines.claimed_num_gpus, claimed_gpu_ram, claimed_dlperf: what the machine's agent claimed at
// its last registration. A machine advertises no more than its last benchmark saw (num_gpus and
// gpu_ram lowered to it), so the claims are kept apart: a later run that sees more (GPUs added)
// raises the advertised figures up to the claims, never beyond them, and a run without a measured
// dlperf leaves the claimed one. Null for machines registered before this migration or made by
// `admin create-machines`: the advertised figures stand in for them. Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machines').addColumn('claimed_num_gpus', 'integer').execute();
  await db.schema.alterTable('machines').addColumn('claimed_gpu_ram', 'integer').execute();
  await db.schema.alterTable('machines').addColumn('claimed_dlperf', 'double precision').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
