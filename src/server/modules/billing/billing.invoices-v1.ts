// The paged billing history of the official CLI's `show invoices-v1` and the search of `search
// invoices`, read from the ledger:
// - invoices (GET /api/v1/invoices/, GET /invoices): the credits added to the account, one each;
// - charges (GET /charges/): per contract (an instance or a volume), its charges in the range
//   summed, with one item per kind (GPU time, storage; a volume's storage).
// Pages are keyset-paged in SQL: `next_token` carries the last row's values of the order's keys
// and the order itself, and a token of another order is refused.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { assertNever, CommonErrors, quoteValue } from '../../errors.js';
import { parseJsonParam, selectFilters, type FilterSpec } from '../../http/select-filters.js';
import { type SelectFilter } from '../../db/filters.js';
import { textOf } from '../../../contract/text.js';
import { roundPrice } from '../../../contract/money.js';
import * as repo from './billing.invoices.repo.js';
import { boolParam, CREDIT_DESCRIPTION, CREDIT_SERVICE, hours, usd } from './billing.invoices.js';

const DAY_MS = 86_400_000;
const bad = (msg: string) => CommonErrors.badRequest(msg);
const parseJson = (name: string, raw: unknown): unknown => parseJsonParam(name, raw, bad);

export const PAGE_DEFAULT_LIMIT = 60;
export const PAGE_MAX_LIMIT = 500;
export const SEARCH_MAX_LIMIT = 1000;

// ---- filters ----------------------------------------------------------------------------------

// time: epoch seconds, compared in ms; cents and dollars: compared in micro-dollars; flag: true/false.
type Kind = 'int' | 'time' | 'cents' | 'dollars' | 'number' | 'string' | 'flag' | 'contract';

/**
 * The invoice fields openrig has, each a column of the invoices' derived table: the credits, and
 * the prepaid deposits (`instance_prepay`: a prepay, money out, `is_credit` false; its refund on
 * destroy, money in, `is_credit` true). Every credit is
 * a paid, undelayed credit purchase (`is_credit` true; `is_delayed`, `failed`, `refunded`,
 * `is_check` false) with no cut, from the `operator` service; `when`, `paid_on` and
 * `payment_expected` are the moment it was added. The others of the published list
 * (balance_before, balance_after, event_id, extra, stripe_*, error, paypal_email,
 * transfer_group) are not kept: filtering on one is a 400 naming the fields there are.
 */
const INVOICE_FIELDS: Record<string, { col: string; kind: Kind }> = {
  id: { col: 'inv.id', kind: 'int' },
  user_id: { col: 'inv.user_id', kind: 'int' },
  when: { col: 'inv.created_at', kind: 'time' },
  paid_on: { col: 'inv.created_at', kind: 'time' },
  payment_expected: { col: 'inv.created_at', kind: 'time' },
  amount_cents: { col: 'inv.credit_micros', kind: 'cents' },
  original_amount: { col: 'inv.credit_micros', kind: 'cents' },
  amount: { col: 'inv.credit_micros', kind: 'dollars' },
  is_credit: { col: 'inv.is_credit', kind: 'flag' },
  is_delayed: { col: 'inv.zero', kind: 'flag' },
  failed: { col: 'inv.failed', kind: 'flag' },
  refunded: { col: 'inv.zero', kind: 'flag' },
  is_check: { col: 'inv.zero', kind: 'flag' },
  cut_amount: { col: 'inv.zero', kind: 'number' },
  cut_percent: { col: 'inv.zero', kind: 'number' },
  service: { col: 'inv.service', kind: 'string' },
};

/** The charge fields: the UTC day a charge counts on (epoch seconds of its start) and the contract type. */
const CHARGE_FIELDS: Record<string, { col: string; kind: Kind }> = {
  day: { col: 'c.day', kind: 'time' },
  type: { col: 'c.type', kind: 'contract' },
};
const CONTRACT_TYPES = ['instance', 'volume', 'serverless'];

function coerce(field: string, kind: Kind, v: unknown): string | number | null {
  if (kind === 'flag') {
    if (v === true || v === 1 || v === 'true' || v === 'True' || v === '1') return 1;
    if (v === false || v === 0 || v === 'false' || v === 'False' || v === '0') return 0;
    throw bad(`select_filters: ${field} takes true or false, not ${quoteValue(v)}`);
  }
  if (kind === 'string' || kind === 'contract') {
    const s = typeof v === 'number' ? String(v) : v;
    if (typeof s !== 'string') throw bad(`select_filters: ${field} takes strings, not ${quoteValue(v)}`);
    if (kind === 'contract' && !CONTRACT_TYPES.includes(s))
      throw bad(`select_filters: type takes ${CONTRACT_TYPES.join(', ')}, not ${quoteValue(v)}`);
    return s;
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (kind === 'int' && !Number.isSafeInteger(n))
    throw bad(`select_filters: ${field} takes integers, not ${quoteValue(v)}`);
  if (!Number.isFinite(n) || Math.abs(n) > 1e13)
    throw bad(`select_filters: ${field} takes numbers, not ${quoteValue(v)}`);
  // Times are given in epoch seconds and kept in ms; cents and dollars are compared in micro-dollars.
  if (kind === 'time') return Math.round(n * 1000);
  if (kind === 'cents') return Math.round(n * 10_000);
  if (kind === 'dollars') return Math.round(n * 1_000_000);
  return n;
}

const spec = (fields: Record<string, { col: string; kind: Kind }>): FilterSpec<Kind> => ({
  fields,
  coerce,
  ordered: (kind) => ['int', 'time', 'cents', 'dollars', 'number'].includes(kind),
  bad,
});
const INVOICE_FILTERS = spec(INVOICE_FIELDS);
const CHARGE_FILTERS = spec(CHARGE_FIELDS);

/** The parsed select_filters with `required` among its fields, else a 400 with an example. */
function filtersRequiring(raw: unknown, filters: FilterSpec<Kind>, required: string): SelectFilter[] {
  const parsed = parseJson('select_filters', raw);
  const conds = selectFilters(parsed, filters);
  if (parsed === undefined || !Object.hasOwn(parsed as object, required))
    throw bad(
      `select_filters.${required} is required: the range in epoch seconds (UTC), e.g. {"${required}": {"gte": 1767225600, "lte": 1769903999}}`,
    );
  return conds;
}

// ---- paging -----------------------------------------------------------------------------------

function pageLimit(raw: unknown): number {
  if (raw === undefined || raw === '') return PAGE_DEFAULT_LIMIT;
  const n = typeof raw === 'number' ? raw : /^\d+$/.test(textOf(raw)) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > PAGE_MAX_LIMIT)
    throw bad(`limit must be an integer from 1 to ${PAGE_MAX_LIMIT}`);
  return n;
}

interface Token {
  o: string;
  v: number[];
}

/** The values after which a page starts, from the previous page's next_token; null for the first page. */
function readToken(raw: unknown, signature: string, size: number): number[] | null {
  if (raw === undefined || raw === '' || raw === null) return null;
  let tok: Token;
  try {
    tok = JSON.parse(Buffer.from(textOf(raw), 'base64url').toString('utf8')) as Token;
  } catch {
    throw bad('after_token is not a token this API gave out');
  }
  if (!tok || tok.o !== signature || !Array.isArray(tok.v) || tok.v.length !== size)
    throw bad('after_token belongs to another order (give the same latest_first and order_by as its page)');
  // A token is the client's to tamper with: every value must be an integer, as the keys are.
  if (!tok.v.every((v) => Number.isSafeInteger(v))) throw bad('after_token is not a token this API gave out');
  return tok.v;
}

const writeToken = (signature: string, v: number[]): string =>
  Buffer.from(JSON.stringify({ o: signature, v } satisfies Token)).toString('base64url');

/**
 * A v1 page from `rows`, read with a limit of `limit + 1`: the first `limit` of them as `entry`
 * makes them, `total` of all, and the token of the next page when the extra row came (else null).
 */
function pageReply<R, E>(
  rows: { row: R; key: number[] }[],
  limit: number,
  signature: string,
  total: number,
  entry: (row: R) => E,
) {
  const page = rows.slice(0, limit);
  return {
    success: true,
    count: page.length,
    total,
    next_token: rows.length > limit ? writeToken(signature, page[page.length - 1]!.key) : null,
    results: page.map((p) => entry(p.row)),
  };
}

// ---- invoices ---------------------------------------------------------------------------------

export interface InvoicesV1Query {
  select_filters?: unknown;
  order_by?: unknown;
  latest_first?: string;
  limit?: unknown;
  after_token?: unknown;
}

const ORDER_COLUMNS = ['when', 'paid_on', 'amount_cents'];

/** order_by when given (it takes precedence), else latest_first (default true); ties by id. */
function invoiceOrder(q: InvoicesV1Query): { name: string; dir: 'asc' | 'desc' }[] {
  const raw = parseJson('order_by', q.order_by);
  let order: { name: string; dir: 'asc' | 'desc' }[];
  if (raw === undefined || raw === null) {
    order = [{ name: 'when', dir: boolParam('latest_first', q.latest_first, true) ? 'desc' : 'asc' }];
  } else {
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > ORDER_COLUMNS.length)
      throw bad(`order_by must be a JSON array of {"col", "dir"} (1 to ${ORDER_COLUMNS.length})`);
    order = raw.map((o: unknown) => {
      const e = o as { col?: unknown; dir?: unknown } | null;
      if (!e || typeof e.col !== 'string' || !ORDER_COLUMNS.includes(e.col))
        throw bad(`order_by: unknown column ${quoteValue(e?.col)} (use ${ORDER_COLUMNS.join(', ')})`);
      const dir = e.dir === undefined ? 'desc' : textOf(e.dir).toLowerCase();
      if (dir !== 'asc' && dir !== 'desc')
        throw bad(`order_by: dir must be asc or desc, not ${quoteValue(e.dir)}`);
      return { name: e.col, dir };
    });
  }
  return [...order, { name: 'id', dir: order[0]!.dir }];
}

/** The service of a prepaid deposit's invoices, as the official CLI's `-it` names it. */
export const PREPAY_SERVICE = 'instance_prepay';

/** What an invoice is: its type, service, description and sign (money in is negative). */
function invoiceKind(r: repo.CreditInvoiceRow): {
  type: string;
  service: string;
  description: string;
  moneyIn: boolean;
} {
  switch (r.kind) {
    case 'credit':
      return { type: 'credit', service: CREDIT_SERVICE, description: CREDIT_DESCRIPTION, moneyIn: true };
    case 'prepay':
      return {
        type: PREPAY_SERVICE,
        service: PREPAY_SERVICE,
        description: `Prepaid deposit on instance ${r.instance_id}`,
        moneyIn: false,
      };
    case 'deposit_refund':
      return {
        type: 'deposit_refund',
        service: PREPAY_SERVICE,
        description: `Deposit of instance ${r.instance_id} refunded when it was destroyed`,
        moneyIn: true,
      };
    case 'payout':
      return { type: 'payout', service: r.service, description: payoutDescription(r), moneyIn: false };
    default:
      return assertNever(r.kind);
  }
}

const PAYOUT_WAYS: Record<string, string> = {
  paypal_manual: 'PayPal',
  wise_manual: 'Wise',
  internal: 'internal account',
};

/** A payout's line: its period, where it goes and its status. */
function payoutDescription(r: repo.CreditInvoiceRow): string {
  const day = (ms: number | null) => (ms === null ? '?' : new Date(ms).toISOString().slice(0, 10));
  const way = PAYOUT_WAYS[r.service];
  const to = way ? ` to ${way} ${r.destination ?? ''}`.trimEnd() : ' (no payout destination set)';
  return `Payout of earnings ${day(r.payout_start)} to ${day(r.payout_end)}${to}: ${r.status}`;
}

/**
 * An invoice of `show invoices-v1 --invoices`: a credit or a deposit refund with its amount
 * negative, as money in; a prepay positive, as money out of the balance; a host's payout
 * positive (what it pays the host; the CLI shows payouts as they are), paid when settled.
 */
function creditResult(r: repo.CreditInvoiceRow) {
  const at = r.created_at / 1000;
  const k = invoiceKind(r);
  if (r.kind === 'payout')
    return {
      start: at,
      end: r.status === 'paid' && r.settled_at !== null ? r.settled_at / 1000 : null,
      type: k.type,
      source: r.service,
      description: k.description,
      amount: usd(r.credit_micros),
      metadata: { invoice_id: r.id, service: k.service, status: r.status ?? 'pending' },
      items: [],
    };
  return {
    start: at,
    end: at,
    type: k.type,
    source: r.kind === 'credit' ? CREDIT_SERVICE : `instance-${r.instance_id}`,
    description: k.description,
    amount: k.moneyIn ? -usd(r.credit_micros) : usd(r.credit_micros),
    metadata: { invoice_id: r.id, service: k.service },
    items: [],
  };
}

/**
 * GET /api/v1/invoices/: a page of the caller's invoices passing select_filters (`when`
 * required), `total` of them on every page, and the token of the next page (null after the last).
 */
export async function invoicesV1(db: Kysely<DB>, userId: number, q: InvoicesV1Query) {
  const filters = filtersRequiring(q.select_filters, INVOICE_FILTERS, 'when');
  const order = invoiceOrder(q);
  const limit = pageLimit(q.limit);
  const signature = order.map((o) => `${o.name}:${o.dir}`).join(',');
  const after = readToken(q.after_token, signature, order.length);
  const [rows, total] = await Promise.all([
    repo.invoicePage(db, userId, { filters, order, after, limit: limit + 1 }),
    repo.invoiceCount(db, userId, filters),
  ]);
  return pageReply(rows, limit, signature, total, creditResult);
}

/** One invoice record of `search invoices`: the published fields openrig has. */
function invoiceRecord(r: repo.CreditInvoiceRow) {
  const at = r.created_at / 1000;
  const cents = r.credit_micros / 10_000;
  return {
    id: r.id,
    user_id: r.user_id,
    when: at,
    paid_on: at,
    payment_expected: at,
    amount_cents: cents,
    original_amount: cents,
    amount: usd(r.credit_micros),
    is_credit: invoiceKind(r).moneyIn,
    is_delayed: false,
    failed: r.status === 'failed',
    refunded: false,
    is_check: false,
    cut_amount: 0,
    cut_percent: 0,
    service: invoiceKind(r).service,
    description: invoiceKind(r).description,
  };
}

/**
 * GET /invoices (`search invoices`): the caller's invoices passing select_filters, newest first,
 * at most `limit` (default and most 1000). select_cols is accepted; every field is returned.
 */
export async function searchInvoices(
  db: Kysely<DB>,
  userId: number,
  q: { select_filters?: unknown; limit?: unknown },
) {
  const filters = selectFilters(parseJson('select_filters', q.select_filters), INVOICE_FILTERS);
  let limit = SEARCH_MAX_LIMIT;
  if (q.limit !== undefined && q.limit !== '') {
    limit = /^\d+$/.test(textOf(q.limit)) ? Number(q.limit) : NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_MAX_LIMIT)
      throw bad(`limit must be an integer from 1 to ${SEARCH_MAX_LIMIT}`);
  }
  const rows = await repo.invoicePage(db, userId, {
    filters,
    order: [{ name: 'id', dir: 'desc' }],
    after: null,
    limit,
  });
  return rows.map((r) => invoiceRecord(r.row));
}

// ---- charges ----------------------------------------------------------------------------------

export interface ChargesQuery {
  select_filters?: unknown;
  latest_first?: string;
  limit?: unknown;
  after_token?: unknown;
  format?: string;
}

/** Hours per month of a volume's $ per GB-month (as for instance disks). */
const HOURS_PER_MONTH = 720;

/**
 * A contract's charges: the whole, and an item per kind it was charged for. An instance has GPU
 * time and storage; a volume its storage (GB × $ per GB-month, by the hour).
 */
function contractResult(r: repo.ContractChargeRow) {
  const start = r.start / 1000;
  const end = r.end / 1000;
  const days = Math.floor((r.end - 1) / DAY_MS) - Math.floor(r.start / DAY_MS) + 1;
  const item = (type: string, micros: number, ms: number, rate: number, what: string) => ({
    start,
    end,
    type,
    source: null,
    description: `${what}${hours(ms).toFixed(3)} hours at $${roundPrice(rate)}/hour`,
    amount: usd(micros),
    metadata: {},
    items: [],
  });
  const span = `${days} day${days === 1 ? '' : 's'}`;
  const label = r.label === '' ? null : r.label;
  if (r.type === 'volume')
    return {
      start,
      end,
      type: 'volume',
      source: `volume-${r.contract_id}`,
      description: `Volume ${r.contract_id}${label ? ` (${label})` : ''} Charges - ${span}`,
      amount: usd(r.volume_micros),
      metadata: { label },
      items: [
        item(
          'storage',
          r.volume_micros,
          r.volume_ms,
          (r.volume_gb * r.storage_cost) / HOURS_PER_MONTH,
          `Volume ${r.contract_id}, ${r.volume_gb} GB at $${roundPrice(r.storage_cost)}/GB/month, `,
        ),
      ],
    };
  const items = [];
  if (r.compute_ms > 0 || r.compute_micros > 0)
    items.push(item('gpu', r.compute_micros, r.compute_ms, r.dph_compute, ''));
  if (r.disk_ms > 0 || r.disk_micros > 0)
    items.push(item('storage', r.disk_micros, r.disk_ms, r.dph_disk, `${r.disk} GB, `));
  return {
    start,
    end,
    type: 'instance',
    source: `instance-${r.contract_id}`,
    description: `Instance ${r.contract_id} Charges - ${span}`,
    amount: usd(r.compute_micros + r.disk_micros),
    metadata: { label, template_id: r.template_id },
    items,
  };
}

/**
 * GET /charges/ (`show invoices-v1 --charges`): a page of the caller's contracts with charges
 * on the UTC days select_filters names (`day` required), newest activity first with latest_first
 * (by each one's last charge), else by each one's first charge; `format` table or tree (the
 * same: openrig has no serverless contracts to collapse).
 */
export async function chargesV1(db: Kysely<DB>, userId: number, q: ChargesQuery) {
  const filters = filtersRequiring(q.select_filters, CHARGE_FILTERS, 'day');
  if (q.format !== undefined && q.format !== '' && q.format !== 'table' && q.format !== 'tree')
    throw bad(`format must be table or tree, not ${quoteValue(q.format)}`);
  const latest = boolParam('latest_first', q.latest_first, true);
  const key = latest ? 'end' : 'start';
  const dir = latest ? 'desc' : 'asc';
  const limit = pageLimit(q.limit);
  const signature = `${key}:${dir}`;
  const after = readToken(q.after_token, signature, 2);
  const [rows, total] = await Promise.all([
    repo.contractPage(db, userId, { filters, key, dir, after, limit: limit + 1 }),
    repo.contractCount(db, userId, filters),
  ]);
  return pageReply(rows, limit, signature, total, contractResult);
}
