// Webhooks and the event feed: endpoint CRUD (the signing secret is shown once, at creation or
// rotation), the caller's events of the last 30 days, delivery history, manual retries and test
// deliveries. Sending is the dispatcher's (jobs/webhook-dispatcher.ts).
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { decryptSecret, encryptSecret } from '../../crypto.js';
import { tx } from '../../db/connection.js';
import * as repo from './webhooks.repo.js';
import { WebhookErrors } from './webhooks.errors.js';
import { EVENT_TYPES, TEST_EVENT_TYPE, eventBody, newEventId } from './webhooks.events.js';
import { newSecret } from './webhooks.signing.js';
import { allowList, hostProblem, urlProblem } from './webhooks.address.js';

// The account's balance alert, set and read by the account settings.
export { balanceAlertOf, setBalanceAlert } from './webhooks.repo.js';

type Ctx = Pick<Deps, 'db' | 'store' | 'clock' | 'config'>;

export const EVENT_RETENTION_MS = 30 * 86_400_000;
/** After a rotation the previous secret still signs for this long. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
export const MAX_WEBHOOKS = 20;
const FAMILIES = new Set(EVENT_TYPES.map((t) => t.slice(0, t.indexOf('.'))));

export interface WebhookView {
  id: number;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: number | null;
  previous_secret_valid_until: number | null;
  created_at: number;
  updated_at: number;
}

function view(r: repo.WebhookRow, now: number): WebhookView {
  return {
    id: Number(r.id),
    url: r.url,
    description: r.description,
    events: JSON.parse(r.events) as string[],
    enabled: r.enabled === 1,
    disabled_reason: r.disabled_reason,
    failing_since: r.failing_since === null ? null : r.failing_since / 1000,
    previous_secret_valid_until:
      r.old_secret_until !== null && r.old_secret_until > now ? r.old_secret_until / 1000 : null,
    created_at: r.created_at / 1000,
    updated_at: r.updated_at / 1000,
  };
}

/** An entry of a webhook's `events` or of the feed's `types`: a type, `family.*`, or `*`. */
export function validFilterEntry(e: string): boolean {
  if (e === '*') return true;
  if ((EVENT_TYPES as readonly string[]).includes(e)) return true;
  const fam = e.endsWith('.*') ? e.slice(0, -2) : e.endsWith('.') ? e.slice(0, -1) : null;
  return fam !== null && FAMILIES.has(fam);
}

function checkEvents(events: string[]): string[] {
  const list = [...new Set(events.map((e) => e.trim()))];
  if (list.length === 0 || list.length > 50 || !list.every(validFilterEntry)) {
    const bad = list.find((e) => !validFilterEntry(e));
    throw WebhookErrors.badEvents(
      bad !== undefined
        ? `Unknown event type or prefix ${JSON.stringify(bad)}; known types: ${EVENT_TYPES.join(', ')} (or a prefix such as instance.*, or *)`
        : undefined,
    );
  }
  return list;
}

async function checkUrl(ctx: Ctx, url: string): Promise<string> {
  const problem =
    urlProblem(url, ctx.config.webhooks) ??
    (await hostProblem(new URL(url).hostname, allowList(ctx.config.webhooks.allowHosts)));
  if (problem) throw WebhookErrors.badUrl(problem);
  return url;
}

export interface WebhookInput {
  url?: string;
  events?: string[];
  description?: string;
  enabled?: boolean;
}

export async function createWebhook(
  ctx: Ctx,
  auth: AuthContext,
  body: WebhookInput & { url: string },
): Promise<WebhookView & { secret: string }> {
  const now = ctx.clock.now();
  const url = await checkUrl(ctx, body.url);
  const events = checkEvents(body.events ?? ['*']);
  const secret = newSecret();
  const id = await tx(ctx.store, async (trx) => {
    await repo.lockUser(trx, auth.user.id);
    const n = await repo.countWebhooks(trx, auth.user.id);
    if (Number(n.n) >= MAX_WEBHOOKS) throw WebhookErrors.tooMany();
    return repo.insertWebhook(trx, {
      user_id: auth.user.id,
      url,
      description: body.description ?? '',
      events: JSON.stringify(events),
      enabled: body.enabled === false ? 0 : 1,
      secret_enc: encryptSecret(ctx.config.secretKey, secret),
      old_secret_enc: null,
      old_secret_until: null,
      failing_since: null,
      disabled_reason: null,
      created_at: now,
      updated_at: now,
      locked_by: null,
      locked_until: null,
    });
  });
  const row = await repo.webhookOf(ctx.db, auth.user.id, id);
  return { ...view(row!, now), secret };
}

export async function listWebhooks(ctx: Ctx, auth: AuthContext): Promise<WebhookView[]> {
  const now = ctx.clock.now();
  return (await repo.webhooksOf(ctx.db, auth.user.id)).map((r) => view(r, now));
}

async function own(ctx: Ctx, auth: AuthContext, id: number): Promise<repo.WebhookRow> {
  const row = await repo.webhookOf(ctx.db, auth.user.id, id);
  if (!row) throw WebhookErrors.notFound();
  return row;
}

export async function getWebhook(ctx: Ctx, auth: AuthContext, id: number): Promise<WebhookView> {
  return view(await own(ctx, auth, id), ctx.clock.now());
}

/** PUT: changes the fields given. Enabling an endpoint again forgets its failure record. */
export async function updateWebhook(
  ctx: Ctx,
  auth: AuthContext,
  id: number,
  body: WebhookInput,
): Promise<WebhookView> {
  const now = ctx.clock.now();
  const set: Parameters<typeof repo.updateWebhook>[3] = { updated_at: now };
  if (body.url !== undefined) set.url = await checkUrl(ctx, body.url);
  if (body.events !== undefined) set.events = JSON.stringify(checkEvents(body.events));
  if (body.description !== undefined) set.description = body.description;
  if (body.enabled !== undefined) {
    set.enabled = body.enabled ? 1 : 0;
    if (body.enabled) Object.assign(set, { failing_since: null, disabled_reason: null });
  }
  if (!(await repo.updateWebhook(ctx.db, auth.user.id, id, set))) throw WebhookErrors.notFound();
  return getWebhook(ctx, auth, id);
}

export async function deleteWebhook(ctx: Ctx, auth: AuthContext, id: number): Promise<void> {
  if (!(await repo.deleteWebhook(ctx.db, auth.user.id, id))) throw WebhookErrors.notFound();
}

/** A new signing secret, shown in this reply only; the current one keeps signing for 24 h. */
export async function rotateSecret(
  ctx: Ctx,
  auth: AuthContext,
  id: number,
): Promise<WebhookView & { secret: string }> {
  const now = ctx.clock.now();
  const row = await own(ctx, auth, id);
  const secret = newSecret();
  await repo.updateWebhook(ctx.db, auth.user.id, id, {
    secret_enc: encryptSecret(ctx.config.secretKey, secret),
    old_secret_enc: row.secret_enc,
    old_secret_until: now + ROTATION_OVERLAP_MS,
    updated_at: now,
  });
  return { ...(await getWebhook(ctx, auth, id)), secret };
}

/** The secrets that sign a delivery now: the current one, and the previous one during a rotation. */
export function signingSecrets(key: Buffer, row: repo.WebhookRow, now: number): string[] {
  const out: string[] = [];
  const cur = decryptSecret(key, row.secret_enc);
  if (cur) out.push(cur);
  if (row.old_secret_enc && row.old_secret_until !== null && row.old_secret_until > now) {
    const old = decryptSecret(key, row.old_secret_enc);
    if (old) out.push(old);
  }
  return out;
}

export interface EventView {
  id: string;
  type: string;
  timestamp: string;
  created_at: number;
  data: Record<string, unknown>;
}

export async function listEvents(
  ctx: Ctx,
  auth: AuthContext,
  q: { after?: string; types?: string; limit?: number },
): Promise<{ events: EventView[]; has_more: boolean; next_after: string | null }> {
  const now = ctx.clock.now();
  let afterSeq = 0;
  if (q.after) {
    const r = await repo.eventSeqOf(ctx.db, auth.user.id, q.after);
    if (!r) throw WebhookErrors.badCursor();
    afterSeq = Number(r.seq);
  }
  const exact: string[] = [];
  const prefixes: string[] = [];
  let all = false;
  if (q.types) {
    for (const raw of q.types.split(',')) {
      const t = raw.trim();
      if (!t) continue;
      if (!validFilterEntry(t))
        throw WebhookErrors.badTypes(`Unknown event type or prefix ${JSON.stringify(t)}`);
      if (t === '*') all = true;
      else if (t.endsWith('.*')) prefixes.push(t.slice(0, -1));
      else if (t.endsWith('.')) prefixes.push(t);
      else exact.push(t);
    }
  }
  const limit = Math.min(Math.max(q.limit ?? 100, 1), 1000);
  const rows = await repo.listEvents(ctx.db, {
    userId: auth.user.id,
    afterSeq,
    since: now - EVENT_RETENTION_MS,
    exact: all ? [] : exact,
    prefixes: all ? [] : prefixes,
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  const events = page.map(
    (r) =>
      JSON.parse(
        eventBody({ id: r.public_id, type: r.type, created_at: r.created_at, data: JSON.parse(r.data) }),
      ) as EventView,
  );
  return {
    events,
    has_more: rows.length > limit,
    next_after: page.length > 0 ? page[page.length - 1]!.public_id : (q.after ?? null),
  };
}

export interface DeliveryView {
  id: number;
  webhook_id: number;
  event_id: string;
  event_type: string;
  state: string;
  attempts: number;
  next_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  last_latency_ms: number | null;
  delivered_at: number | null;
  created_at: number;
  attempt_log: {
    at: number;
    status_code: number | null;
    latency_ms: number;
    success: boolean;
    error: string | null;
  }[];
}

export async function listDeliveries(
  ctx: Ctx,
  auth: AuthContext,
  webhookId: number,
  q: { before?: number; limit?: number },
): Promise<DeliveryView[]> {
  await own(ctx, auth, webhookId);
  const rows = await repo.deliveriesOf(ctx.db, webhookId, {
    beforeId: q.before ?? null,
    limit: Math.min(Math.max(q.limit ?? 50, 1), 500),
  });
  const attempts = await repo.attemptsOf(
    ctx.db,
    rows.map((r) => Number(r.id)),
  );
  const byDelivery = new Map<number, DeliveryView['attempt_log']>();
  for (const a of attempts) {
    const list = byDelivery.get(Number(a.delivery_id)) ?? [];
    list.push({
      at: a.at / 1000,
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      success: a.success === 1,
      error: a.error,
    });
    byDelivery.set(Number(a.delivery_id), list);
  }
  return rows.map((r) => ({
    id: Number(r.id),
    webhook_id: Number(r.webhook_id),
    event_id: r.msg_id,
    event_type: r.event_type,
    state: r.state,
    attempts: r.attempts,
    next_attempt_at: r.state === 'pending' ? r.next_at / 1000 : null,
    last_status: r.last_status,
    last_error: r.last_error,
    last_latency_ms: r.last_latency_ms,
    delivered_at: r.delivered_at === null ? null : r.delivered_at / 1000,
    created_at: r.created_at / 1000,
    attempt_log: byDelivery.get(Number(r.id)) ?? [],
  }));
}

/** Sends a delivery again (same event id), due now; a delivered one is sent once more too. */
export async function retryDelivery(
  ctx: Ctx,
  auth: AuthContext,
  webhookId: number,
  deliveryId: number,
): Promise<void> {
  await own(ctx, auth, webhookId);
  if (!(await repo.requeueDelivery(ctx.db, webhookId, deliveryId, ctx.clock.now())))
    throw WebhookErrors.deliveryNotFound();
}

/** Queues a `webhook.test` delivery to this endpoint only (not in the feed). */
export async function testWebhook(
  ctx: Ctx,
  auth: AuthContext,
  webhookId: number,
): Promise<{ delivery_id: number; event_id: string }> {
  const row = await own(ctx, auth, webhookId);
  if (row.enabled !== 1) throw WebhookErrors.disabled();
  const now = ctx.clock.now();
  const id = newEventId();
  const [deliveryId] = await repo.insertDeliveries(ctx.db, [
    {
      webhook_id: webhookId,
      user_id: auth.user.id,
      msg_id: id,
      event_type: TEST_EVENT_TYPE,
      subject: id,
      body: eventBody({ id, type: TEST_EVENT_TYPE, created_at: now, data: { webhook_id: webhookId } }),
      created_at: now,
      state: 'pending',
      next_at: now,
      attempts: 0,
    },
  ]);
  return { delivery_id: deliveryId!, event_id: id };
}

/** The caller's event settings: the balance (in dollars) at or below which balance.low fires, or null. */
export async function getEventSettings(
  ctx: Ctx,
  auth: AuthContext,
): Promise<{ balance_low_threshold: number | null }> {
  const r = await repo.balanceAlertOf(ctx.db, auth.user.id);
  return { balance_low_threshold: r ? Number(r.threshold_micros) / 1e6 : null };
}

export async function putEventSettings(
  ctx: Ctx,
  auth: AuthContext,
  body: { balance_low_threshold: number | null },
): Promise<{ balance_low_threshold: number | null }> {
  const t = body.balance_low_threshold;
  await repo.setBalanceAlert(ctx.db, auth.user.id, t === null ? null : Math.round(t * 1e6));
  return getEventSettings(ctx, auth);
}
