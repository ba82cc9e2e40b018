// templates: saved instance configurations a user creates once and rents from many times (the
// templates module). hash_id names one version of a template: it is unique, and an update gives
// the template a new one. A deleted template keeps its row (deleted_at) so the instances made
// from it still name it. instances.template_id, template_name and template_hash_id: the template
// an instance was created from, copied at creation (null when none). Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('templates'))
    .addColumn('hash_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('image', 'text', (c) => c.notNull())
    .addColumn('tag', 'text')
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('onstart', 'text', (c) => c.notNull())
    .addColumn('runtype', 'text', (c) => c.notNull())
    .addColumn('use_ssh', 'integer', (c) => c.notNull())
    .addColumn('ssh_direct', 'integer', (c) => c.notNull())
    .addColumn('jup_direct', 'integer', (c) => c.notNull())
    .addColumn('use_jupyter_lab', 'integer', (c) => c.notNull())
    .addColumn('jupyter_dir', 'text')
    .addColumn('docker_login_repo', 'text')
    .addColumn('href', 'text')
    .addColumn('repo', 'text')
    .addColumn('readme', 'text')
    .addColumn('readme_visible', 'integer', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('extra_filters', 'text', (c) => c.notNull())
    .addColumn('recommended_disk_space', 'double precision')
    .addColumn('private', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('templates_hash_id_uq').unique().on('templates').column('hash_id').execute();
  // A search reads the caller's own templates and everyone's public ones, newest first.
  await db.schema
    .createIndex('templates_owner_idx')
    .on('templates')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('templates_public_idx')
    .on('templates')
    .columns(['private', 'deleted_at', 'created_at'])
    .execute();

  await db.schema.alterTable('instances').addColumn('template_id', 'bigint').execute();
  await db.schema.alterTable('instances').addColumn('template_name', 'text').execute();
  await db.schema.alterTable('instances').addColumn('template_hash_id', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
