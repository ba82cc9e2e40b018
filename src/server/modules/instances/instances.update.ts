// Updating an instance's configuration (the official CLI's `update instance`, PUT
// /api/v0/instances/update_template/{id}/): its image, env, onstart, args or a template's settings
// replace the old ones, and its host recreates the container from them on the same machine and
// GPUs, at the same price, keeping the id, the contract and its billing.
//
// The configuration carries a generation (instances.config_generation): the update writes the new
// configuration and generation + 1 in one conditional UPDATE on the generation it read, so two
// concurrent updates apply one after the other (the loser reads the winner's row and applies its
// fields on top), never a mix, and the last committed one is what the agent converges to: it
// recreates a container whose generation is older than the one the sync hands out.
import type { Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { DB } from '../../db/schema.js';
import type { AuthContext } from '../../identity.js';
import { quoteValue } from '../../errors.js';
import { textOf } from '../../../contract/text.js';
import { LostRace, txRetry } from '../../db/tx.js';
import { decideUpdate } from '../../../contract/instance-states.js';
import { dockerOptionsEnv, shellWords } from '../../../contract/docker-options.js';
import { settleInstance, statusOf, type InstanceRow } from '../billing/billing.service.js';
import { instanceEvent, recordEvent } from '../webhooks/webhooks.events.js';
import { withVolumes } from './instances.query.js';
import { instanceBodyFrom, usableTemplate, usableTemplateById } from '../templates/templates.service.js';
import type { TemplateRow } from '../templates/templates.service.js';
import { parseCreateBody, type CreateRequest } from '../instance-config/instance-config.parse.js';
import { InstanceErrors } from './instances.errors.js';
import type { InstanceView } from './instances.view.js';
import * as repo from './instances.repo.js';

const bad = (msg: string) => InstanceErrors.badRequest(msg);

/** What an update body gives; a field left out keeps the instance's (or the template's) value. */
export interface UpdateInput {
  image?: string;
  /** The create body's env object: variables and `-p` port requests. */
  env?: Record<string, unknown>;
  onstart?: string;
  args?: string[];
  /** The launch mode (create's runtype); arguments given select `args` unless this says otherwise. */
  runtype?: string;
  templateHashId?: string;
  templateId?: unknown;
}

const given = (v: unknown): boolean => v !== undefined && v !== null;

/**
 * The update body, checked in form (the values themselves are checked once merged, by create
 * instance's own validators). A field sent as null counts as not given. `args` is a list of
 * strings as create takes it, or one string (what the official CLI sends), split as a shell
 * splits words; `env` an object as create takes it, or docker-style options (`-e K=V -p 80:80`).
 */
export function parseUpdateBody(id: number, body: unknown): UpdateInput {
  if (body === undefined || body === null) body = {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw bad('The body must be a JSON object with the fields to change');
  const b = body as Record<string, unknown>;
  if (given(b.id) && textOf(b.id) !== String(id))
    throw bad(`id ${quoteValue(b.id)} in the body is not the instance ${id} of the path`);
  const out: UpdateInput = {};
  if (given(b.image)) {
    if (typeof b.image !== 'string' || b.image.trim() === '')
      throw bad('image must be a container image reference such as "ubuntu:22.04"');
    out.image = b.image;
  }
  if (given(b.onstart)) {
    if (typeof b.onstart !== 'string') throw bad('onstart must be a string (the script)');
    out.onstart = b.onstart;
  }
  if (given(b.args)) {
    if (typeof b.args === 'string') out.args = shellWords(b.args);
    else if (Array.isArray(b.args) && b.args.every((a) => typeof a === 'string')) out.args = b.args;
    else throw bad('args must be a string of arguments or an array of strings');
  }
  if (given(b.runtype)) {
    if (typeof b.runtype !== 'string') throw bad('runtype must be a string such as "ssh" or "args"');
    out.runtype = b.runtype;
  }
  if (given(b.env)) {
    if (typeof b.env === 'string') {
      const r = dockerOptionsEnv(shellWords(b.env));
      if ('error' in r) throw bad(`env: ${r.error}`);
      out.env = r.env;
    } else if (typeof b.env === 'object' && !Array.isArray(b.env)) {
      out.env = b.env as Record<string, unknown>;
    } else {
      throw bad('env must be an object of NAME: value (port requests as "-p 8080:8080": "1")');
    }
  }
  if (given(b.template_hash_id)) {
    if (typeof b.template_hash_id !== 'string' || b.template_hash_id === '')
      throw bad('template_hash_id must be the hash_id of a template (search templates shows it)');
    out.templateHashId = b.template_hash_id;
  }
  if (given(b.template_id)) out.templateId = b.template_id;
  if (Object.keys(out).length === 0)
    throw bad('Nothing to update: give image, env, onstart, args, runtype, template_id or template_hash_id');
  return out;
}

/** The configuration an instance runs, as its row holds it. */
export interface InstanceConfig {
  image: string;
  env: Record<string, unknown>;
  onstart: string;
  runtype: string;
  args: string[] | null;
  disk: number;
}

export function configOf(row: Pick<InstanceRow, 'image' | 'env' | 'onstart' | 'runtype' | 'args' | 'disk'>) {
  return {
    image: row.image,
    env: JSON.parse(row.env) as Record<string, unknown>,
    onstart: row.onstart,
    runtype: row.runtype,
    args: row.args === null ? null : (JSON.parse(row.args) as string[]),
    disk: row.disk,
  };
}

/** A runtype with the `args` mode: arguments given to an update are run, as create --args does. */
function withArgsMode(runtype: string): string {
  return runtype.split(/\s+/).includes('args') ? runtype : 'args';
}

/**
 * The new configuration, checked by create instance's own validators (parseCreateBody), so an
 * update can carry nothing a create could not. Without a template the given fields replace the
 * instance's (env as a whole); with one, the template's image, env, onstart and runtype are the
 * base, merged as create instance merges them (env: the template's with the given variables on
 * top) and the given fields win. The disk stays. Arguments given also select runtype `args`,
 * unless a runtype is given too (the way back from `args` to another mode).
 * An onstart not given and not from a template is kept as stored (already checked, and decoded).
 */
export function updatedConfig(
  cur: InstanceConfig,
  tpl: TemplateRow | null,
  input: UpdateInput,
): { req: CreateRequest; onstart: string } {
  let body: Record<string, unknown>;
  if (tpl === null) {
    body = {
      image: input.image ?? cur.image,
      env: input.env ?? cur.env,
      onstart: input.onstart ?? null,
      runtype: input.args ? withArgsMode(cur.runtype) : cur.runtype,
      args: input.args ?? cur.args,
    };
  } else {
    body = instanceBodyFrom(tpl, {
      image: input.image ?? null,
      env: input.env ?? null,
      onstart: input.onstart ?? null,
      args: input.args ?? null,
    });
    if (input.args) body.runtype = withArgsMode(textOf(body.runtype ?? ''));
  }
  if (input.runtype !== undefined) body.runtype = input.runtype;
  const req = parseCreateBody({ ...body, disk: cur.disk });
  const kept = tpl === null && input.onstart === undefined;
  return { req, onstart: kept ? cur.onstart : req.onstart };
}

async function templateFor(db: Kysely<DB>, userId: number, input: UpdateInput): Promise<TemplateRow | null> {
  if (input.templateHashId !== undefined) {
    const tpl = await usableTemplate(db, userId, input.templateHashId);
    if (input.templateId !== undefined && textOf(input.templateId) !== String(tpl.id))
      throw bad(
        `template_id ${quoteValue(input.templateId)} and template_hash_id ${quoteValue(input.templateHashId)} name different templates`,
      );
    return tpl;
  }
  if (input.templateId !== undefined) return usableTemplateById(db, userId, input.templateId);
  return null;
}

export interface UpdateReply {
  success: true;
  msg: string;
  updated_instance: InstanceView;
}

/** Tries of the update's transaction: each loss means another update of it committed first. */
const UPDATE_TRIES = 32;

export async function updateInstanceConfig(
  deps: Deps,
  auth: AuthContext,
  id: number,
  body: unknown,
): Promise<UpdateReply> {
  const input = parseUpdateBody(id, body);
  const now = deps.clock.now();
  const userId = auth.user.id;
  return txRetry(
    deps.store,
    async (db) => {
      const row = await repo.ownInstanceRow(db, userId, id);
      if (!row) throw InstanceErrors.notFound(`No such instance: ${id}`);
      if (row.destroyed_at !== null) throw InstanceErrors.invalidState(`Instance ${id} is destroyed`);
      const s = statusOf(row);
      const d = decideUpdate(s);
      if (d.kind === 'refuse') throw InstanceErrors.invalidState(d.msg);
      if (d.kind === 'noop') throw new Error('an update always applies or is refused');
      const m = await repo.machineForUpdate(db, row.machine_id);
      if (!m || m.deleted_at !== null)
        throw InstanceErrors.machineUnavailable(
          'The machine was removed by its host; destroy this instance and rent another offer',
        );
      if (m.agent_config_generations !== 1)
        throw InstanceErrors.agentOutdated(
          m.agent_uid === null
            ? `Machine ${m.id} has no agent to recreate instance ${id}'s container, so it cannot be updated`
            : `The agent of machine ${m.id} registered without config_generations: it is older than this server and would not recreate instance ${id}'s container; its host must upgrade openrig agent before the instance can be updated`,
        );
      const tpl = await templateFor(db, userId, input);
      const { req, onstart } = updatedConfig(configOf(row), tpl, input);
      if (req.ports.length + 1 > m.direct_port_count)
        throw bad(
          `${req.ports.length} port requests and SSH need ${req.ports.length + 1} direct ports; this machine has ${m.direct_port_count}`,
        );
      const generation = row.config_generation + 1;
      const moves = d.next.actual !== s.actual;
      const msg = moves
        ? `update requested: the host recreates the container with the new configuration (generation ${generation})`
        : `updated: the new configuration (generation ${generation}) runs at the next start`;
      // Billing is settled at the rates of the state left (compute stops while it is recreated).
      if (moves) await settleInstance(db, row, now);
      const written = await repo.writeConfiguration(
        db,
        id,
        { generation: row.config_generation, intended: s.intended, actual: s.actual },
        {
          image: req.image,
          env: JSON.stringify(req.rawEnv),
          onstart,
          runtype: req.runtype,
          args: req.args === null ? null : JSON.stringify(req.args),
          actual_status: d.next.actual,
          intended_status: d.next.intended,
          status_msg: msg,
          ...(tpl === null
            ? {}
            : { template_id: tpl.id, template_name: tpl.name, template_hash_id: tpl.hash_id }),
        },
      );
      // Another update (or a start, stop, report) committed since the read: decide again on it.
      if (!written) throw new LostRace(`configuration of instance ${id}`);
      if (moves)
        await recordEvent(
          db,
          now,
          instanceEvent(row, s.actual, d.next.actual, { intended_status: d.next.intended, status_msg: msg }),
        );
      // The reply is the instance as this transaction wrote it.
      const view = await repo
        .liveInstanceQuery({ db, dialect: deps.store.dialect }, userId, id, now)
        .executeTakeFirst();
      if (!view) throw new LostRace(`instance ${id}`);
      return {
        success: true as const,
        msg: moves
          ? `Instance ${id} updated: its host recreates the container with the new configuration at its next sync (the disk starts afresh); it is loading until the new container runs`
          : `Instance ${id} updated: it stays stopped; its host replaces the container (the disk starts afresh) and the new configuration runs at the next start`,
        updated_instance: withVolumes(view, now),
      };
    },
    UPDATE_TRIES,
  );
}
