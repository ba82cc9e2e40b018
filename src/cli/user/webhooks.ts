// webhook create|show|test|rotate-secret|delete, show webhooks, show events [--follow].
import type { Command } from 'commander';
import { act, common, intArg, UsageError } from './context.js';
import { DASH, fitLine, relativeTime, table } from '../output.js';
import type { FeedEvent, Webhook } from '../../contract/api-types.js';

export function webhooksTable(rows: Webhook[], nowMs: number, maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'ID', get: (w) => String(w.id), align: 'right' },
      { header: 'URL', get: (w) => w.url, shrink: true },
      { header: 'Events', get: (w) => w.events.join(','), shrink: true },
      {
        header: 'Enabled',
        get: (w) => (w.enabled ? 'yes' : `no${w.disabled_reason ? ` (${w.disabled_reason})` : ''}`),
      },
      {
        header: 'Failing since',
        get: (w) => (w.failing_since ? relativeTime(w.failing_since, nowMs) : DASH),
        drop: 2,
      },
      { header: 'Description', get: (w) => w.description || DASH, drop: 1, shrink: true },
    ],
    maxWidth,
  );
}

/** One line per event: time, type, id, and the data's fields. */
export function eventLine(e: FeedEvent): string {
  const data = Object.entries(e.data)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  // Control characters from the server never reach the terminal.
  // eslint-disable-next-line no-control-regex
  const controls = /[\u0000-\u001f\u007f-\u009f]/g;
  return `${e.timestamp}  ${e.type.padEnd(22)}  ${e.id}  ${data}`.replace(controls, ' ') + '\n';
}

function eventList(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  const list = (Array.isArray(v) ? v : [v])
    .flatMap((x) => String(x).split(','))
    .map((x) => x.trim())
    .filter(Boolean);
  if (list.length === 0) throw new UsageError('--events needs at least one type or prefix, e.g. instance.*');
  return list;
}

export function registerWebhookCommands(webhook: Command, show: Command): void {
  common(
    webhook
      .command('create')
      .argument('<url>', 'https:// URL the events are POSTed to')
      .option(
        '--events <types...>',
        "types or prefixes, comma- or space-separated (default '*'); quote globs: 'instance.*'",
      )
      .option('--description <text>', 'a note to recognise it by')
      .description('register a webhook; its signing secret is shown once, here'),
    "openrig webhook create https://example.com/hooks --events 'instance.*' tfa.locked",
  ).action(
    act(async (ctx, [url], o) => {
      const r = await ctx.client.createWebhook({
        url: String(url),
        events: eventList(o.events),
        description: o.description === undefined ? undefined : String(o.description),
      });
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        `Webhook ${r.webhook.id} created for ${r.webhook.events.join(',')}. Its signing secret is shown only this once; store it now:\n${r.secret}\n`,
      );
    }),
  );
  common(
    webhook.command('test').argument('<id>', 'webhook ID').description('send a webhook.test event to it'),
    'openrig webhook test 3',
  ).action(
    act(async (ctx, [id]) => {
      const n = intArg(id, 'webhook ID');
      const r = await ctx.client.testWebhook(n);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`Test event ${r.event_id} queued for webhook ${n} (delivery ${r.delivery_id})\n`);
    }),
  );
  common(
    webhook
      .command('rotate-secret')
      .argument('<id>', 'webhook ID')
      .description('a new signing secret (shown once); the old one keeps signing for 24 hours'),
    'openrig webhook rotate-secret 3',
  ).action(
    act(async (ctx, [id]) => {
      const r = await ctx.client.rotateWebhookSecret(intArg(id, 'webhook ID'));
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        `New signing secret of webhook ${r.webhook.id} (the previous one stays valid for 24 hours):\n${r.secret}\n`,
      );
    }),
  );
  common(
    webhook.command('delete').argument('<id>', 'webhook ID').description('remove a webhook'),
    'openrig webhook delete 3',
  ).action(
    act(async (ctx, [id]) => {
      const n = intArg(id, 'webhook ID');
      await ctx.client.deleteWebhook(n);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`Webhook ${n} deleted\n`);
    }),
  );
  common(show.command('webhooks').description('list your webhooks'), 'openrig show webhooks').action(
    act(async (ctx) => {
      const rows = await ctx.client.listWebhooks();
      if (ctx.raw) return ctx.printRaw();
      ctx.out(rows.length ? webhooksTable(rows, ctx.now(), ctx.width) : 'No webhooks\n');
    }),
  );
  common(
    show
      .command('events')
      .option('--after <id>', 'only events after this one')
      .option('--types <types>', "comma-separated types or prefixes, e.g. 'instance.*,tfa.locked'")
      .option('--follow', 'keep waiting for new events (Ctrl-C to stop)')
      .option('--interval <seconds>', 'how often --follow asks (default 2)')
      .description('your events of the last 30 days, oldest first'),
    "openrig show events --types 'instance.*' --follow",
  ).action(
    act(async (ctx, _a, o) => {
      let after = o.after === undefined ? undefined : String(o.after);
      const types = o.types === undefined ? undefined : String(o.types);
      const interval = o.interval === undefined ? 2 : Number(o.interval);
      if (!(interval > 0)) throw new UsageError('--interval must be a positive number of seconds');
      for (;;) {
        const page = await ctx.client.listEvents({ after, types, limit: 500 });
        if (ctx.raw) ctx.printRaw();
        // On a terminal each event stays one row (cut at the edge); piped, whole.
        else for (const e of page.events) ctx.out(fitLine(eventLine(e).trimEnd(), ctx.width) + '\n');
        after = page.next_after ?? after;
        if (page.has_more) continue;
        if (!o.follow) return;
        await new Promise((r) => setTimeout(r, interval * 1000));
      }
    }),
  );
}
