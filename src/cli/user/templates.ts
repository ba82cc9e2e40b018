// create template, show templates [--mine], delete template HASH (docs/templates.md). A template
// is rented from with `create instance OFFER --template HASH` (offers.ts).
import type { Command } from 'commander';
import type { CreateTemplateBody, Template } from '../../contract/api-types.js';
import { DASH, fmtNum, relativeTime, str, table } from '../output.js';
import { act, common, numArg, UsageError, type Opts, type OptValue } from './context.js';
import { onstartOf, parseEnv } from './instance-options.js';

/** The longest hash_id the server takes. */
const HASH_MAX = 64;

export function templatesTable(rows: Template[], nowMs: number, maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'Hash', get: (t) => str(t.hash_id) },
      { header: 'Name', get: (t) => str(t.name), shrink: true },
      { header: 'Image', get: (t) => (t.tag ? `${t.image}:${t.tag}` : str(t.image)), shrink: true },
      {
        header: 'Disk',
        get: (t) => {
          const d = t.recommended_disk_space;
          return typeof d === 'number' ? `${fmtNum(d, Number.isInteger(d) ? 0 : 1)} GB` : DASH;
        },
        align: 'right',
        drop: 3,
      },
      { header: 'Runtype', get: (t) => str(t.runtype), drop: 2 },
      { header: 'Visibility', get: (t) => (t.private ? 'private' : 'public') },
      { header: 'Created', get: (t) => relativeTime(t.created_at, nowMs), drop: 1 },
    ],
    maxWidth,
  );
}

/** The create-template body from the command's options; bad options are usage errors. */
export function templateBody(opts: Opts): CreateTemplateBody {
  const name = String(opts.name ?? '').trim();
  if (name === '') throw new UsageError('--name must name the template');
  const image = String(opts.image ?? '').trim();
  if (image === '') throw new UsageError('--image must name a container image, e.g. pytorch/pytorch');
  const body: CreateTemplateBody = { name, image, private: !opts.public };
  if (opts.tag !== undefined) {
    const tag = String(opts.tag);
    if (tag === '' || /[\s:@/]/.test(tag))
      throw new UsageError('--tag must be one image tag (no spaces, ":", "@" or "/")');
    body.tag = tag;
  }
  if (opts.env) {
    const env = (opts.env as string[]).join(' ');
    parseEnv([env]); // checked here, so a bad option is a usage error; sent as written
    body.env = env;
  }
  const onstart = onstartOf(opts);
  if (onstart !== undefined) body.onstart = onstart;
  if (opts.disk !== undefined) {
    const disk = numArg(opts.disk, '--disk');
    if (disk <= 0) throw new UsageError('--disk must be a positive number of GB');
    body.recommended_disk_space = disk;
  }
  if (opts.ssh && opts.args) throw new UsageError('give --ssh or --args, not both');
  if (opts.ssh) {
    body.runtype = 'ssh';
    body.use_ssh = true;
  } else if (opts.args) body.runtype = 'args';
  return body;
}

function hashArg(v: OptValue): string {
  const h = String(v ?? '').trim();
  if (h === '' || h.length > HASH_MAX || /\s/.test(h))
    throw new UsageError(`template hash must be a hash_id (show templates lists them), not "${String(v)}"`);
  return h;
}

export function registerTemplateCommands(show: Command, create: Command, del: Command): void {
  common(
    create
      .command('template')
      .requiredOption('--name <name>', 'the name of the template')
      .requiredOption('--image <image>', 'container image without its tag, e.g. pytorch/pytorch')
      .option('--tag <tag>', 'image tag, appended as image:tag')
      .option('--env <spec...>', "environment and ports, docker style: '-e KEY=VALUE -p 8080:8080'")
      .option('--onstart <file>', 'script file run once when an instance starts')
      .option('--onstart-cmd <cmd>', 'command run once when an instance starts')
      .option('--disk <GB>', 'recommended disk size: the disk of an instance that gives none')
      .option('--ssh', 'instances get ssh access (runtype ssh; the default)')
      .option('--args', 'instances run the image entrypoint (runtype args)')
      .option('--public', 'everyone may see it and rent from it (default: only you)')
      .description('save an instance configuration as a template'),
    "openrig create template --name torch --image pytorch/pytorch --tag latest --disk 50 --env '-e HF_HOME=/workspace -p 8888:8888' --ssh",
  ).action(
    act(async (ctx, _a, opts) => {
      const r = await ctx.client.createTemplate(templateBody(opts));
      if (ctx.raw) return ctx.printRaw();
      const t = r.template;
      ctx.out(
        `Created template ${t.name} (${t.private ? 'private' : 'public'}), hash ${t.hash_id}\nRent from it: openrig create instance OFFER --template ${t.hash_id}\n`,
      );
    }),
  );
  common(
    show
      .command('templates')
      .option('--mine', "only your own templates (not others' public ones)")
      .description("list your templates and everyone's public ones, newest first"),
    'openrig show templates --mine',
  ).action(
    act(async (ctx, _a, opts) => {
      // The search gives the caller's and public templates; --mine keeps those the caller created.
      const filters = opts.mine ? { creator_id: { eq: (await ctx.client.currentUser()).id } } : undefined;
      const r = await ctx.client.searchTemplates({ filters });
      if (ctx.raw) return ctx.printRaw();
      const rows = Array.isArray(r.templates) ? r.templates : [];
      ctx.out(rows.length ? templatesTable(rows, ctx.now(), ctx.width) : 'No templates\n');
    }),
  );
  common(
    del
      .command('template')
      .argument('<hash>', "the template's hash_id (show templates)")
      .description('delete one of your templates; instances made from it keep running'),
    'openrig delete template 3f2a9c0d8e7b6a5f4e3d2c1b0a998877',
  ).action(
    act(async (ctx, [hash]) => {
      const h = hashArg(hash);
      await ctx.client.deleteTemplate(h);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`Template ${h} deleted\n`);
    }),
  );
}
