import type { Kysely } from 'kysely';

// Owned by its module; empty until that module lands. Forward-only.
export async function up(_db: Kysely<any>): Promise<void> {}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
