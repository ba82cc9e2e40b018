// The statements of the billing history reads, all over the ledger (billing_ledger): its charges
// grouped per instance, UTC day and kind; its credits as invoices; its charges per contract (an
// instance or a volume), keyset-paged; and the labels of the caller's instances. Only the caller's rows.
import { sql, type ExpressionBuilder, type Kysely, type RawBuilder } from 'kysely';
import type { DB } from '../../db/schema.js';
import { whereFilters, type SelectFilter } from '../../db/filters.js';
import { earningDay } from './billing.repo.js';

const CHARGE_KINDS = ['compute', 'disk'];
/** The ledger kinds a contract's charges are: an instance's compute and disk, a volume's storage. */
const CONTRACT_KINDS = [...CHARGE_KINDS, 'volume'];

/**
 * The caller's charges whose billed period ended in (from, to] (epoch ms), summed per instance,
 * UTC day and kind in one grouped statement, each group with its billed time, first start and
 * last end, and the instance's locked rates and disk size.
 */
export function dailyCharges(db: Kysely<DB>, userId: number, p: { from: number; to: number }) {
  return db
    .selectFrom('billing_ledger as l')
    .innerJoin('instances as i', 'i.id', 'l.instance_id')
    .select([
      'l.instance_id',
      earningDay.as('day'),
      'l.kind',
      sql<number>`sum(l.amount_micros)`.as('micros'),
      sql<number>`sum(l.period_end - l.period_start)`.as('ms'),
      sql<number>`min(l.period_start)`.as('start'),
      sql<number>`max(l.period_end)`.as('end'),
      'i.dph_compute',
      'i.dph_disk',
      'i.disk',
      // The market tier of the charge: an interruptible (bid) instance is charged its bid.
      'i.is_bid',
    ])
    .where('l.user_id', '=', userId)
    .where('l.kind', 'in', CHARGE_KINDS)
    .where('l.period_end', '>', p.from)
    .where('l.period_end', '<=', p.to)
    .groupBy(['l.instance_id', earningDay, 'l.kind', 'i.dph_compute', 'i.dph_disk', 'i.disk', 'i.is_bid'])
    .execute();
}

/**
 * The caller's volume charges whose billed period ended in (from, to] (epoch ms), summed per
 * volume and UTC day, each with its billed time, first start, last end, and the volume's label,
 * GB and locked $ per GB-month.
 */
export function dailyVolumeCharges(db: Kysely<DB>, userId: number, p: { from: number; to: number }) {
  return db
    .selectFrom('billing_ledger as l')
    .innerJoin('volumes as v', 'v.id', 'l.volume_id')
    .select([
      'l.volume_id',
      earningDay.as('day'),
      sql<number>`sum(l.amount_micros)`.as('micros'),
      sql<number>`sum(l.period_end - l.period_start)`.as('ms'),
      sql<number>`min(l.period_start)`.as('start'),
      sql<number>`max(l.period_end)`.as('end'),
      'v.label',
      'v.size_gb',
      'v.storage_cost',
    ])
    .where('l.user_id', '=', userId)
    .where('l.kind', '=', 'volume')
    .where('l.period_end', '>', p.from)
    .where('l.period_end', '<=', p.to)
    .groupBy(['l.volume_id', earningDay, 'v.label', 'v.size_gb', 'v.storage_cost'])
    .execute();
}

/**
 * The caller's credits dated in (from, to] (epoch ms), oldest first. A credit's period is its
 * instant (period_end = created_at), so the ledger's (user_id, kind, period_end) index finds them.
 */
export function creditsBetween(db: Kysely<DB>, userId: number, p: { from: number; to: number }) {
  return db
    .selectFrom('billing_ledger')
    .select(['id', 'amount_micros', 'created_at'])
    .where('user_id', '=', userId)
    .where('kind', '=', 'credit')
    .where('period_end', '>', p.from)
    .where('period_end', '<=', p.to)
    .orderBy('id')
    .execute();
}

/** Micro-dollars of the caller's charges (instances' and volumes') whose billed period ended after `from` (epoch ms). */
export async function chargedSince(db: Kysely<DB>, userId: number, from: number): Promise<number> {
  const row = await db
    .selectFrom('billing_ledger')
    .select(sql<number | null>`sum(amount_micros)`.as('micros'))
    .where('user_id', '=', userId)
    .where('kind', 'in', CONTRACT_KINDS)
    .where('period_end', '>', from)
    .executeTakeFirst();
  return Number(row?.micros ?? 0);
}

// ---- keyset paging ----------------------------------------------------------------------------

/** One key of a keyset order: an expression of the query and its direction. */
export interface PageKey {
  expr: RawBuilder<unknown>;
  dir: 'asc' | 'desc';
}

/** Rows strictly after `after` in the order of `keys` (each key in its own direction). */
function afterKeys(eb: ExpressionBuilder<any, any>, keys: PageKey[], after: number[]) {
  return eb.or(
    keys.map((k, i) =>
      eb.and([
        ...keys.slice(0, i).map((q, j) => eb(q.expr, '=', after[j]!)),
        eb(k.expr, k.dir === 'asc' ? '>' : '<', after[i]!),
      ]),
    ),
  );
}

// ---- credits as invoices ----------------------------------------------------------------------

/** The ledger kinds that are invoices: credits, and prepaid deposits moved in and refunded. */
export const INVOICE_KINDS = ['credit', 'prepay', 'deposit_refund'] as const;
/** An invoice's kind: a ledger kind above, or a host's payout (the payouts table). */
export type InvoiceKind = (typeof INVOICE_KINDS)[number] | 'payout';

/**
 * The caller's invoices as records, a derived table `inv` whose columns the invoice filters read:
 * id, created_at (when, paid_on and payment_expected), credit_micros (the amount, positive),
 * service (`operator` for a credit, `instance_prepay` for a deposit and its refund), is_credit
 * (money into the balance: a credit or a refund), kind, instance_id, and the constants one and
 * zero (the flags and cuts openrig has no other value for). The caller's payouts as a host are
 * invoices too (kind `payout`, service its method: paypal_manual, wise_manual, internal or none;
 * credit_micros what it pays the host; failed when it failed), with their status, destination,
 * period and settlement. `order_id` tells ledger rows (even) from payouts (odd) for the paging
 * key, as their ids come from two tables.
 */
function creditInvoices(db: Kysely<DB>, userId: number) {
  const nullText = sql<string | null>`cast(null as text)`;
  const nullInt = sql<number | null>`cast(null as bigint)`;
  const rows = db
    .selectFrom('billing_ledger as l')
    .select([
      'l.id',
      sql<number>`l.id * 2`.as('order_id'),
      'l.user_id',
      'l.created_at',
      'l.kind',
      'l.instance_id',
      sql<number>`case when l.kind = 'prepay' then l.amount_micros else 0 - l.amount_micros end`.as(
        'credit_micros',
      ),
      sql<string>`case when l.kind = 'credit' then 'operator' else 'instance_prepay' end`.as('service'),
      sql<number>`case when l.kind = 'prepay' then 0 else 1 end`.as('is_credit'),
      sql<number>`0`.as('failed'),
      nullText.as('status'),
      nullText.as('destination'),
      nullInt.as('payout_start'),
      nullInt.as('payout_end'),
      nullInt.as('settled_at'),
      sql<number>`1`.as('one'),
      sql<number>`0`.as('zero'),
    ])
    .where('l.user_id', '=', userId)
    .where('l.kind', 'in', INVOICE_KINDS)
    .unionAll(
      db
        .selectFrom('payouts as p')
        .select([
          'p.id',
          sql<number>`p.id * 2 + 1`.as('order_id'),
          sql<number>`p.host_id`.as('user_id'),
          'p.created_at',
          sql<string>`'payout'`.as('kind'),
          sql<number | null>`cast(null as bigint)`.as('instance_id'),
          sql<number>`p.net_micros`.as('credit_micros'),
          sql<string>`p.method`.as('service'),
          sql<number>`0`.as('is_credit'),
          sql<number>`case when p.status = 'failed' then 1 else 0 end`.as('failed'),
          sql<string | null>`p.status`.as('status'),
          sql<string | null>`p.destination`.as('destination'),
          sql<number | null>`p.period_start`.as('payout_start'),
          sql<number | null>`p.period_end`.as('payout_end'),
          sql<number | null>`p.settled_at`.as('settled_at'),
          sql<number>`1`.as('one'),
          sql<number>`0`.as('zero'),
        ])
        .where('p.host_id', '=', userId),
    );
  return db.selectFrom(rows.as('inv'));
}

/** What an invoice page can be ordered by, each a column of `inv`. */
export const INVOICE_ORDER_KEYS: Record<string, RawBuilder<unknown>> = {
  when: sql`inv.created_at`,
  paid_on: sql`inv.created_at`,
  amount_cents: sql`inv.credit_micros`,
  id: sql`inv.order_id`,
};

export interface CreditInvoiceRow {
  id: number;
  user_id: number;
  created_at: number;
  credit_micros: number;
  kind: InvoiceKind;
  instance_id: number | null;
  /** A payout's: pending, paid or failed (null for a ledger row), where it goes, its period and settlement (ms). */
  status: string | null;
  service: string;
  destination: string | null;
  payout_start: number | null;
  payout_end: number | null;
  settled_at: number | null;
}

/**
 * A page of the caller's credit invoices passing `filters`: keyset-paged on `order` (the last
 * key is the id), at most `limit` rows, each with its values of the keys.
 */
export async function invoicePage(
  db: Kysely<DB>,
  userId: number,
  p: {
    filters: SelectFilter[];
    order: { name: string; dir: 'asc' | 'desc' }[];
    after: number[] | null;
    limit: number;
  },
): Promise<{ row: CreditInvoiceRow; key: number[] }[]> {
  const keys: PageKey[] = p.order.map((o) => ({ expr: INVOICE_ORDER_KEYS[o.name]!, dir: o.dir }));
  let qb = whereFilters(creditInvoices(db, userId), p.filters)
    .select([
      'inv.id',
      'inv.user_id',
      'inv.created_at',
      'inv.credit_micros',
      'inv.kind',
      'inv.instance_id',
      'inv.status',
      'inv.service',
      'inv.destination',
      'inv.payout_start',
      'inv.payout_end',
      'inv.settled_at',
    ])
    .select(keys.map((k, i) => k.expr.as(`order_key_${i}`)));
  const after = p.after;
  if (after) qb = qb.where((eb) => afterKeys(eb, keys, after));
  for (const k of keys) qb = qb.orderBy(k.expr, k.dir);
  const rows = (await qb.limit(p.limit).execute()) as (CreditInvoiceRow & Record<string, unknown>)[];
  return rows.map((r) => ({
    row: {
      id: Number(r.id),
      user_id: Number(r.user_id),
      created_at: Number(r.created_at),
      credit_micros: Number(r.credit_micros),
      kind: r.kind,
      instance_id: r.instance_id === null || r.instance_id === undefined ? null : Number(r.instance_id),
      status: r.status ?? null,
      service: String(r.service),
      destination: r.destination ?? null,
      payout_start: r.payout_start === null || r.payout_start === undefined ? null : Number(r.payout_start),
      payout_end: r.payout_end === null || r.payout_end === undefined ? null : Number(r.payout_end),
      settled_at: r.settled_at === null || r.settled_at === undefined ? null : Number(r.settled_at),
    },
    key: keys.map((_, i) => Number(r[`order_key_${i}`])),
  }));
}

/** How many of the caller's credit invoices pass `filters`. */
export async function invoiceCount(db: Kysely<DB>, userId: number, filters: SelectFilter[]): Promise<number> {
  const row = await whereFilters(creditInvoices(db, userId), filters)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

// ---- charges per contract ---------------------------------------------------------------------

/**
 * The caller's charges as a derived table `c` whose columns the charge filters read: `day` (the
 * start, in epoch ms, of the UTC day the charge counts on: the day its billed period ended in)
 * and `type` (the contract: `instance` for compute and disk charges, `volume` for a volume's
 * storage). `contract_id` is the instance's or the volume's id, and `contract_key` numbers the
 * contracts apart (an instance and a volume may share an id): id × 2, plus 1 for a volume.
 */
function chargeRows(db: Kysely<DB>, userId: number) {
  const rows = db
    .selectFrom('billing_ledger as l')
    .select([
      'l.kind',
      'l.amount_micros',
      'l.period_start',
      'l.period_end',
      sql<number>`${earningDay} * 86400000`.as('day'),
      sql<string>`case when l.kind = 'volume' then 'volume' else 'instance' end`.as('type'),
      sql<number>`coalesce(l.instance_id, l.volume_id)`.as('contract_id'),
      sql<number>`case when l.kind = 'volume' then l.volume_id * 2 + 1 else l.instance_id * 2 end`.as(
        'contract_key',
      ),
    ])
    .where('l.user_id', '=', userId)
    .where('l.kind', 'in', CONTRACT_KINDS);
  return db.selectFrom(rows.as('c'));
}

const sumIf = (kind: string, what: RawBuilder<unknown>) =>
  sql<number>`sum(case when c.kind = ${kind} then ${what} else 0 end)`;

/** What a contract page is ordered by: its first charge (ascending) or its last (descending). */
export const CONTRACT_ORDER_KEYS = {
  start: sql<number>`min(c.period_start)`,
  end: sql<number>`max(c.period_end)`,
} as const;

export interface ContractChargeRow {
  type: 'instance' | 'volume';
  /** The instance's id, or the volume's. */
  contract_id: number;
  start: number;
  end: number;
  compute_micros: number;
  compute_ms: number;
  disk_micros: number;
  disk_ms: number;
  volume_micros: number;
  volume_ms: number;
  label: string;
  template_id: number | null;
  dph_compute: number;
  dph_disk: number;
  disk: number;
  /** A volume's GB and its $ per GB-month (0 for an instance). */
  volume_gb: number;
  storage_cost: number;
}

/**
 * A page of the caller's contracts (instances and volumes) with charges passing `filters`, each
 * with its charges summed per kind in one grouped statement, keyset-paged on (`key`, contract key).
 */
export async function contractPage(
  db: Kysely<DB>,
  userId: number,
  p: {
    filters: SelectFilter[];
    key: keyof typeof CONTRACT_ORDER_KEYS;
    dir: 'asc' | 'desc';
    after: number[] | null;
    limit: number;
  },
): Promise<{ row: ContractChargeRow; key: number[] }[]> {
  const keys: PageKey[] = [
    { expr: CONTRACT_ORDER_KEYS[p.key], dir: p.dir },
    { expr: sql`c.contract_key`, dir: p.dir },
  ];
  let qb = whereFilters(chargeRows(db, userId), p.filters)
    .leftJoin('instances as i', (j) => j.onRef('i.id', '=', 'c.contract_id').on('c.type', '=', 'instance'))
    .leftJoin('volumes as v', (j) => j.onRef('v.id', '=', 'c.contract_id').on('c.type', '=', 'volume'))
    .select([
      'c.contract_key',
      'c.contract_id',
      'c.type',
      CONTRACT_ORDER_KEYS.start.as('start'),
      CONTRACT_ORDER_KEYS.end.as('end'),
      sumIf('compute', sql`c.amount_micros`).as('compute_micros'),
      sumIf('compute', sql`c.period_end - c.period_start`).as('compute_ms'),
      sumIf('disk', sql`c.amount_micros`).as('disk_micros'),
      sumIf('disk', sql`c.period_end - c.period_start`).as('disk_ms'),
      sumIf('volume', sql`c.amount_micros`).as('volume_micros'),
      sumIf('volume', sql`c.period_end - c.period_start`).as('volume_ms'),
      'i.label',
      'i.template_id',
      'i.dph_compute',
      'i.dph_disk',
      'i.disk',
      'v.label as v_label',
      'v.size_gb as v_size_gb',
      'v.storage_cost as v_storage_cost',
    ])
    .select(keys.map((k, i) => k.expr.as(`order_key_${i}`)))
    .groupBy([
      'c.contract_key',
      'c.contract_id',
      'c.type',
      'i.label',
      'i.template_id',
      'i.dph_compute',
      'i.dph_disk',
      'i.disk',
      'v.label',
      'v.size_gb',
      'v.storage_cost',
    ]);
  const after = p.after;
  if (after) qb = qb.having((eb) => afterKeys(eb, keys, after));
  for (const k of keys) qb = qb.orderBy(k.expr, k.dir);
  const rows = (await qb.limit(p.limit).execute()) as Record<string, unknown>[];
  const n = (v: unknown) => Number(v ?? 0);
  return rows.map((r) => {
    const volume = r.type === 'volume';
    const label = volume ? r.v_label : r.label;
    return {
      row: {
        type: volume ? 'volume' : 'instance',
        contract_id: n(r.contract_id),
        start: n(r.start),
        end: n(r.end),
        compute_micros: n(r.compute_micros),
        compute_ms: n(r.compute_ms),
        disk_micros: n(r.disk_micros),
        disk_ms: n(r.disk_ms),
        volume_micros: n(r.volume_micros),
        volume_ms: n(r.volume_ms),
        label: typeof label === 'string' ? label : '',
        template_id: r.template_id === null || r.template_id === undefined ? null : n(r.template_id),
        dph_compute: n(r.dph_compute),
        dph_disk: n(r.dph_disk),
        disk: n(r.disk),
        volume_gb: n(r.v_size_gb),
        storage_cost: n(r.v_storage_cost),
      },
      key: keys.map((_, i) => n(r[`order_key_${i}`])),
    };
  });
}

/** How many of the caller's contracts have charges passing `filters`. */
export async function contractCount(
  db: Kysely<DB>,
  userId: number,
  filters: SelectFilter[],
): Promise<number> {
  const row = await whereFilters(chargeRows(db, userId), filters)
    .select(sql<number>`count(distinct c.contract_key)`.as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

// ---- labels -----------------------------------------------------------------------------------

/** Those of `ids` that are the caller's instances (destroyed ones too) labelled exactly `label`. */
export function instancesLabelled(db: Kysely<DB>, userId: number, ids: number[], label: string) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('instances')
    .select(['id', 'label'])
    .where('user_id', '=', userId)
    .where('id', 'in', ids)
    .where('label', '=', label)
    .orderBy('id')
    .execute();
}
