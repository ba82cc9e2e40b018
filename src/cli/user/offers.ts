// search offers 'QUERY' and create instance OFFER (docs/cli.md).
import type { Command } from 'commander';
import type { CreateFromTemplateBody, CreateInstanceBody } from '../../contract/api-types.js';
import { buildSearchBody } from '../../client/search-query.js';
import { act, common, intArg, numArg, UsageError, type Opts } from './context.js';
import { offersTable } from './views.js';
import { checkWaitOptions, waitOptions, waitOrHint } from './instances.js';
import { onstartOf, parseEnv } from './instance-options.js';

const SEARCH_HELP = `
Query: space-separated terms "field op value"; op is one of = != > >= < <= in notin.
  gpu_name=RTX_4090     (_ stands for a space)      num_gpus>=2
  reliability>0.98      dph<0.8 ($/hour)             gpu_ram>=24 (GB; or 24000MB)
  cpu_ram>=64 (GB)      disk_space>=200 (GB)         duration>=3 (days; or 12h, 1w)
  geolocation in [US,CA]                             verified=any (drop a default filter)
Default filters: verified=true external=false rentable=true rented=false; default order score-.`;

export function registerOfferCommands(search: Command, create: Command): void {
  common(
    search
      .command('offers')
      .argument('[query]', "filters, e.g. 'gpu_name=RTX_4090 num_gpus>=2 reliability>0.98'", '')
      .option(
        '-o, --order <fields>',
        'sort: comma-separated fields, - suffix for descending (e.g. dph_total or score-)',
      )
      .option('-t, --type <type>', 'on-demand, bid (interruptible) or reserved', 'on-demand')
      .option('-l, --limit <n>', 'at most this many offers')
      .option('--storage <GB>', 'disk size to price into $/hr (allocated_storage)', '5')
      .option('-n, --no-default', 'leave out the default filters')
      .description('search offers to rent'),
    "openrig search offers 'gpu_name=RTX_4090 num_gpus>=2 reliability>0.98' -o 'dph_total' --limit 10",
  )
    .addHelpText('after', SEARCH_HELP)
    .action(
      act(async (ctx, [query], opts) => {
        const body = buildSearchBody(String(query ?? ''), {
          order: opts.order as string | undefined,
          type: opts.type as string | undefined,
          limit: opts.limit === undefined ? undefined : intArg(opts.limit, '--limit'),
          storage: numArg(opts.storage, '--storage'),
          noDefault: opts.default === false,
        });
        const r = await ctx.client.searchOffers(body);
        if (ctx.raw) return ctx.printRaw();
        const offers = Array.isArray(r.offers) ? r.offers : [];
        if (offers.length === 0) {
          // Only unverified machines match (new hosts' machines are unverified): say so.
          const v = body.verified as { eq?: unknown } | undefined;
          if (v && v.eq === true) {
            const { verified: _drop, ...anyVerified } = body;
            const more = await ctx.client.searchOffers(anyVerified).then(
              (x) => (Array.isArray(x.offers) ? x.offers.length : 0),
              () => 0,
            );
            if (more > 0) {
              ctx.out(
                `No verified offers match. ${more} unverified offer${more === 1 ? '' : 's'} match; add verified=any\n`,
              );
              return;
            }
          }
          ctx.out('No offers match.\n');
          // A GPU name typo is the usual reason: say which names are on offer.
          if (body.gpu_name !== undefined) {
            const names = await ctx.client.gpuNames().then(
              (g) => g.gpu_names ?? [],
              () => [],
            );
            if (names.length > 0)
              ctx.out(
                `GPU names on offer: ${names.join(', ')} (write spaces as _, e.g. gpu_name=${names[0]!.replace(/ /g, '_')})\n`,
              );
          }
          return;
        }
        ctx.out(offersTable(offers, ctx.width));
      }),
    );

  waitOptions(
    common(
      create
        .command('instance')
        .argument('<offer>', 'offer ID (the ID column of search offers)')
        .option(
          '--template <hash>',
          "a template's hash_id (show templates): it gives the image, disk, onstart, env and runtype not given here",
        )
        .option(
          '--image <image>',
          'container image, e.g. pytorch/pytorch:latest (required without --template)',
        )
        .option('--disk <GB>', `disk size in GB (default ${DEFAULT_DISK_GB}, or the template's)`)
        .option('--onstart <file>', 'script file run once when the instance starts')
        .option('--onstart-cmd <cmd>', 'command run once when the instance starts')
        .option(
          '--env <spec...>',
          "environment and ports, docker style: '-e KEY=VALUE -p 8080:8080' (or KEY=VALUE)",
        )
        .option('--label <label>', 'a label for the instance')
        .option('--price <dph>', 'bid price in $/hour (interruptible instances)')
        .option(
          '--runtype <type>',
          `ssh, ssh_proxy, ssh_direc ssh_proxy, jupyter_proxy ssh_proxy or args (default ${DEFAULT_RUNTYPE}, or the template's)`,
        )
        .option('--args <args...>', 'arguments for the image entrypoint (runtype args)')
        .option('--wait', 'wait until it runs, then print the ssh command')
        .description('rent an offer: create an instance from it'),
      "openrig create instance 42 --image ubuntu:22.04 --disk 20 --wait\nopenrig create instance 42 --image pytorch/pytorch --disk 50 --onstart setup.sh --env '-e HF_TOKEN=abc -p 8888:8888'\nopenrig create instance 42 --template 3f2a9c0d8e7b6a5f4e3d2c1b0a998877 --env '-e HF_TOKEN=abc'",
    ),
  ).action(
    act(async (ctx, [offer], opts) => {
      const offerId = intArg(offer, 'offer ID');
      const body = createBody(opts);
      if (opts.wait) checkWaitOptions(opts); // bad wait options rent nothing
      const r = await ctx.client.createInstance(offerId, body);
      if (ctx.raw) ctx.printRaw();
      else ctx.out(`Created instance ${r.new_contract} from offer ${offerId}.\n`);
      await waitOrHint(ctx, r.new_contract, opts);
    }),
  );
}

/** What a create without a template sends when the user gives no --disk or --runtype. */
export const DEFAULT_DISK_GB = 10;
export const DEFAULT_RUNTYPE = 'ssh';

/**
 * The create-instance body from the command's options. With --template the body carries only
 * what the user gave, so the template's image, disk, onstart, env and runtype fill the rest on
 * the server; without it --image is required and disk and runtype take their defaults.
 */
export function createBody(opts: Opts): CreateInstanceBody | CreateFromTemplateBody {
  const template = opts.template === undefined ? undefined : String(opts.template).trim();
  if (template === '')
    throw new UsageError('--template must be a template hash_id (show templates lists them)');
  const body: Partial<CreateFromTemplateBody> = {};
  if (opts.image !== undefined) {
    body.image = String(opts.image);
    if (body.image.trim() === '') throw new UsageError('--image must name a container image');
  } else if (template === undefined) {
    throw new UsageError(
      '--image is required (a container image, e.g. ubuntu:22.04), unless --template names a template',
    );
  }
  if (opts.disk !== undefined) {
    body.disk = numArg(opts.disk, '--disk');
    if (body.disk <= 0) throw new UsageError('--disk must be a positive number of GB');
  }
  if (opts.runtype !== undefined) body.runtype = String(opts.runtype);
  const onstart = onstartOf(opts);
  if (onstart !== undefined) body.onstart = onstart;
  if (opts.env) body.env = parseEnv(opts.env as string[]);
  if (opts.label !== undefined) body.label = String(opts.label);
  if (opts.price !== undefined) {
    const p = numArg(opts.price, '--price');
    if (p <= 0) throw new UsageError('--price must be a positive $/hour');
    body.price = p;
  }
  if (opts.args) body.args = opts.args as string[];
  if (template !== undefined) return { template_hash_id: template, ...body };
  return {
    ...body,
    image: body.image!,
    disk: body.disk ?? DEFAULT_DISK_GB,
    runtype: body.runtype ?? DEFAULT_RUNTYPE,
  };
}
