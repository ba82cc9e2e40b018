// openrig volumes … (docs/volumes.md): hosts offer disk of their machines for volumes and withdraw
// it; renters search volume offers (the offer query language), make, list and delete volumes.
// An instance mounts a volume when it is created (the create body's volume_info).
import type { Command } from 'commander';
import { parseOrder, parseQuery } from '../../client/search-query.js';
import { table } from '../output.js';
import { act, common, UsageError, type Ctx, type OptValue } from './context.js';

const V0 = '/api/v0';

interface VolumeOffer {
  id: number;
  machine_id: number;
  disk_space: number;
  storage_cost: number;
  geolocation?: string;
  reliability?: number;
  verification?: string;
  duration?: number;
}

interface Volume {
  id: number;
  label: string;
  disk_space: number;
  status: string;
  machine_id: number;
  storage_cost: number;
  total_cost?: number;
  start_date: number;
  instances: number[];
  mount_path: string | null;
}

function posInt(v: OptValue, what: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${what} must be a positive whole number`);
  return n;
}

/** The search body of `volumes search`: the query's filters (no defaults), order and limit. */
export function volumeSearchBody(
  query: string,
  o: { order?: string; limit?: number },
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const t of parseQuery(query)) {
    if (t.value === 'any') continue;
    // Numbers as numbers (the offer query parser keeps the fields it does not know as text).
    const value = typeof t.value === 'string' && /^-?\d+(\.\d+)?$/.test(t.value) ? Number(t.value) : t.value;
    body[t.field] = { ...(body[t.field] ?? {}), [t.op]: value };
  }
  body.order = o.order ? parseOrder(o.order) : [['storage_cost', 'asc']];
  if (o.limit !== undefined) body.limit = o.limit;
  return body;
}

export function volumeOffersTable(rows: VolumeOffer[], width?: number): string {
  return table(
    rows,
    [
      { header: 'ID', get: (r) => String(r.id) },
      { header: 'Machine', get: (r) => String(r.machine_id) },
      { header: 'Free GB', get: (r) => String(r.disk_space), align: 'right' },
      { header: '$/GB/month', get: (r) => r.storage_cost.toFixed(3), align: 'right' },
      { header: 'Country', get: (r) => r.geolocation ?? '', drop: 2 },
      { header: 'Verification', get: (r) => r.verification ?? '', drop: 1 },
    ],
    width,
  );
}

export function volumesTable(rows: Volume[], width?: number): string {
  return table(
    rows,
    [
      { header: 'ID', get: (r) => String(r.id) },
      { header: 'Label', get: (r) => r.label },
      { header: 'GB', get: (r) => String(r.disk_space), align: 'right' },
      { header: 'Machine', get: (r) => String(r.machine_id) },
      { header: 'Status', get: (r) => r.status },
      {
        header: 'Mounted by',
        get: (r) => (r.instances.length > 0 ? `${r.instances.join(', ')} at ${r.mount_path ?? '?'}` : '-'),
      },
      { header: '$/GB/month', get: (r) => r.storage_cost.toFixed(3), align: 'right', drop: 2 },
      { header: 'Charged $', get: (r) => (r.total_cost ?? 0).toFixed(4), align: 'right', drop: 1 },
    ],
    width,
  );
}

function said(ctx: Ctx, r: { msg?: string }, fallback: string): void {
  if (ctx.raw) return ctx.printRaw();
  ctx.out(`${r.msg || fallback}\n`);
}

export function registerVolumeCommands(volumes: Command): void {
  common(
    volumes
      .command('offer <machine...>')
      .requiredOption('-s, --size <gb>', 'GB of each machine offered for volumes')
      .requiredOption('-p, --price <usd>', '$ per GB-month')
      .option('-e, --end <epoch>', 'end of the listing, epoch seconds (default: open-ended)')
      .description('offer disk of your machines for volumes (hosts); again changes the offer'),
    'openrig volumes offer 12 13 -s 200 -p 0.10',
  ).action(
    act(async (ctx, args, opts) => {
      const machines = [args[0]].flat().map((m) => posInt(m, 'MACHINE'));
      const price = Number(opts.price);
      if (!Number.isFinite(price) || price < 0)
        throw new UsageError('--price must be a number of $ per GB-month');
      const body: Record<string, unknown> = {
        size: posInt(opts.size, '--size'),
        machine: machines,
        price_disk: price,
      };
      if (opts.end !== undefined) body.end_date = Number(opts.end);
      said(ctx, await ctx.client.request<{ msg?: string }>('POST', `${V0}/volumes/`, { body }), 'Offered');
    }),
  );
  common(
    volumes.command('unoffer <offer>').description('withdraw a volume offer (hosts; once no volume uses it)'),
    'openrig volumes unoffer 3',
  ).action(
    act(async (ctx, args) => {
      const body = { id: posInt(args[0], 'OFFER') };
      said(
        ctx,
        await ctx.client.request<{ msg?: string }>('POST', `${V0}/volumes/unlist`, { body }),
        'Withdrawn',
      );
    }),
  );
  common(
    volumes
      .command('search [query...]')
      .option('-o, --order <fields>', 'order, e.g. "storage_cost,disk_space-" (default: cheapest first)')
      .option('--limit <n>', 'at most this many offers')
      .description(
        'search volume offers (the offer query language: disk_space, storage_cost, machine_id, …)',
      ),
    "openrig volumes search 'disk_space>=50 storage_cost<0.2'",
  ).action(
    act(async (ctx, args, opts) => {
      const query = [args[0] ?? []].flat().join(' ');
      const limit = opts.limit === undefined ? undefined : posInt(opts.limit, '--limit');
      const body = volumeSearchBody(query, { order: opts.order as string | undefined, limit });
      const r = await ctx.client.request<{ offers: VolumeOffer[] }>('POST', `${V0}/volumes/search/`, {
        body,
      });
      if (ctx.raw) return ctx.printRaw();
      if (r.offers.length === 0) return ctx.out('No volume offers\n');
      ctx.out(volumeOffersTable(r.offers, ctx.width));
    }),
  );
  common(
    volumes
      .command('create <offer>')
      .requiredOption('-s, --size <gb>', 'GB of the volume')
      .option('-n, --name <label>', 'a label')
      .description("make a volume from a volume offer; charged the offer's $/GB-month until deleted"),
    'openrig volumes create 3 -s 50 -n checkpoints',
  ).action(
    act(async (ctx, args, opts) => {
      const body: Record<string, unknown> = {
        id: posInt(args[0], 'OFFER'),
        size: posInt(opts.size, '--size'),
      };
      if (typeof opts.name === 'string') body.name = opts.name;
      said(ctx, await ctx.client.request<{ msg?: string }>('PUT', `${V0}/volumes/`, { body }), 'Created');
    }),
  );
  common(
    volumes.command('show').description('your volumes, and the instance mounting each'),
    'openrig volumes show',
  ).action(
    act(async (ctx) => {
      const r = await ctx.client.request<{ volumes: Volume[] }>('GET', `${V0}/volumes`, {
        query: { owner: 'me', type: 'local_volume' },
      });
      if (ctx.raw) return ctx.printRaw();
      if (r.volumes.length === 0) return ctx.out('No volumes\n');
      ctx.out(volumesTable(r.volumes, ctx.width));
    }),
  );
  common(
    volumes
      .command('delete <volume>')
      .description('delete a volume and its data (refused while an instance mounts it)'),
    'openrig volumes delete 7',
  ).action(
    act(async (ctx, args) => {
      const id = posInt(args[0], 'VOLUME');
      said(
        ctx,
        await ctx.client.request<{ msg?: string }>('DELETE', `${V0}/volumes/`, { query: { id } }),
        'Deleted',
      );
    }),
  );
}
