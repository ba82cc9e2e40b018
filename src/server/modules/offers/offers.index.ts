// The in-memory offer index: every live machine row a process needs for search, kept
// exactly as fresh as the database, so POST /bundles/ evaluates its plan in JavaScript
// (offers.evaluate.ts) instead of reading a few thousand rows per query.
//
// Freshness: search calls sync() first, and sync() applies every change committed before it was
// called. Rows carry a version that triggers move on every search-relevant change (migration 007),
// and the store's change feed (SqlDialect.machineChanges in db/dialect.ts) reads what moved:
// - SQLite: one global counter, exact because writers are serialised; sync() reads the rows with
//   row_version above the highest it has seen.
// - PostgreSQL: versions come from a sequence and may commit out of order, so sync() remembers the
//   snapshot of its last read and next reads, in the same statement as the new snapshot, the rows
//   whose writing transaction (row_xid) that snapshot did not see: committed since, or in progress
//   then. Rows written before the snapshot's xmin were all visible to it, which lets the row_xid
//   index skip them.
// So a search never answers from anything staler than a direct SQL query started at the same time
// would (read-your-writes: a create that committed before the search began is seen).
import { sharedRead } from '../../db/shared-read.js';
import type { Store } from '../../db/connection.js';
import type { ChangeFeed, Raw } from '../../db/dialect.js';
import type { OfferRow } from './offers.fields.js';
import type { Condition, SearchPlan } from './offers.filter.js';
import { jsContext, selectPage, type OrderView, type RowSource } from './offers.evaluate.js';
import { textOf } from '../../../contract/text.js';

// The columns search reads (offers.fields.ts OfferRow), plus whether the row is deleted.
const COLUMNS = [
  'm.id',
  'm.host_id',
  'm.gpu_name',
  'm.num_gpus',
  'm.gpu_ram',
  'm.cpu_name',
  'm.cpu_cores',
  'm.cpu_ghz',
  'm.cpu_ram',
  'm.disk_space',
  'm.disk_held_mb',
  'm.disk_bw',
  'm.inet_up',
  'm.inet_down',
  'm.pcie_bw',
  'm.direct_port_count',
  'm.cuda_max_good',
  'm.driver_version',
  'm.reliability',
  'm.verified',
  'm.geolocation',
  'm.dlperf',
  'm.listed',
  'm.price_gpu_dph',
  'm.price_disk_gb_month',
  'm.min_bid_dph',
  'm.rented',
  'm.bid_to_win_dph',
  'm.listed_until',
  'm.score',
  'm.online_state',
  'm.maint_until',
  'm.gpu_mem_bw',
  'm.total_flops',
  'm.pci_gen',
  'm.compute_cap',
  'm.cpu_arch',
  'm.has_avx',
  'm.ubuntu_version',
  'm.gpu_arch',
  'm.gpu_max_power',
  'm.gpu_max_temp',
  'm.gpu_display_active',
  'm.bw_nvlink',
  'm.mobo_name',
  'm.static_ip',
  'm.verification',
  '(m.last_heartbeat_at IS NOT NULL) AS has_heartbeat',
  '(m.deleted_at IS NOT NULL) AS deleted',
].join(', ');

/** A bucket's rows; `version` moves on every change of them, which retires their sorted views. */
interface Bucket extends RowSource {
  readonly rows: IndexedRow[];
  version: number;
  readonly views: Map<string, OrderView>;
}

// A held row's numbers live in pages of doubles outside the JavaScript heap, because boxed
// doubles in plain fields cost idle memory (bench/RESULTS.md); getters inline to a typed-array load.
const W = 37; // numbers per row: the indexes below
const PAGE_ROWS = 1024;

/** Fixed pages of W doubles per row; a freed row's place is reused. Pages never move. */
class NumberPages {
  private readonly pages: Float64Array[] = [];
  private readonly free: number[] = [];
  private next = 0;

  /** A place for a row: its number, its page and the offset of its first double there. */
  take(): { n: number; page: Float64Array; at: number } {
    const n = this.free.pop() ?? this.next++;
    const i = Math.floor(n / PAGE_ROWS);
    const page = (this.pages[i] ??= new Float64Array(PAGE_ROWS * W));
    return { n, page, at: (n % PAGE_ROWS) * W };
  }

  give(n: number): void {
    this.free.push(n);
  }
}

/** A held row; `slot` is its place in its bucket (removal swaps the last row into it). */
class IndexedRow implements OfferRow {
  readonly id: number;
  readonly gpu_name: string;
  readonly online_state: string;
  readonly cpu_name: string;
  readonly driver_version: string;
  readonly geolocation: string;
  readonly cpu_arch: string;
  readonly ubuntu_version: string;
  readonly gpu_arch: string;
  readonly mobo_name: string;
  readonly verification: string;
  /** Its place in NumberPages (given back when the row leaves the index). */
  readonly n: number;
  private readonly p: Float64Array;
  private readonly o: number;
  slot = 0;

  constructor(r: Raw, str: (v: unknown) => string, pages: NumberPages) {
    // Numbers arrive as numbers from both drivers (bigint is parsed in db/connection.ts).
    const n = (v: unknown): number => Number(v);
    this.id = n(r.id);
    this.gpu_name = str(r.gpu_name);
    this.online_state = str(r.online_state);
    this.cpu_name = str(r.cpu_name);
    this.driver_version = str(r.driver_version);
    this.geolocation = str(r.geolocation);
    this.cpu_arch = str(r.cpu_arch);
    this.ubuntu_version = str(r.ubuntu_version);
    this.gpu_arch = str(r.gpu_arch);
    this.mobo_name = str(r.mobo_name);
    this.verification = str(r.verification);
    const place = pages.take();
    this.n = place.n;
    this.p = place.page;
    this.o = place.at;
    const p = this.p;
    const o = this.o;
    p[o] = n(r.num_gpus);
    p[o + 1] = n(r.listed);
    // NaN stands for NULL (listed_until and maint_until are nullable).
    p[o + 2] = r.listed_until === null || r.listed_until === undefined ? NaN : n(r.listed_until);
    p[o + 3] = n(r.rented);
    p[o + 4] = truthy(r.has_heartbeat) ? 1 : 0;
    p[o + 5] = n(r.verified);
    p[o + 6] = n(r.direct_port_count);
    p[o + 7] = n(r.disk_space);
    p[o + 8] = n(r.disk_held_mb);
    p[o + 9] = n(r.min_bid_dph);
    p[o + 10] = n(r.price_gpu_dph);
    p[o + 11] = n(r.price_disk_gb_month);
    p[o + 12] = n(r.dlperf);
    p[o + 13] = n(r.score);
    p[o + 14] = n(r.reliability);
    p[o + 15] = n(r.host_id);
    p[o + 16] = n(r.gpu_ram);
    p[o + 17] = n(r.cpu_cores);
    p[o + 18] = n(r.cpu_ghz);
    p[o + 19] = n(r.cpu_ram);
    p[o + 20] = n(r.disk_bw);
    p[o + 21] = n(r.inet_up);
    p[o + 22] = n(r.inet_down);
    p[o + 23] = n(r.pcie_bw);
    p[o + 24] = n(r.cuda_max_good);
    p[o + 25] = r.maint_until === null || r.maint_until === undefined ? NaN : n(r.maint_until);
    p[o + 26] = r.bid_to_win_dph === null || r.bid_to_win_dph === undefined ? NaN : n(r.bid_to_win_dph);
    // The benchmarks' figures (migration 039).
    p[o + 27] = n(r.gpu_mem_bw);
    p[o + 28] = n(r.total_flops);
    p[o + 29] = n(r.pci_gen);
    p[o + 30] = n(r.compute_cap);
    p[o + 31] = n(r.has_avx);
    p[o + 32] = n(r.gpu_max_power);
    p[o + 33] = n(r.gpu_max_temp);
    p[o + 34] = n(r.gpu_display_active);
    p[o + 35] = n(r.bw_nvlink);
    p[o + 36] = n(r.static_ip);
  }

  get gpu_mem_bw(): number {
    return this.p[this.o + 27]!;
  }
  get total_flops(): number {
    return this.p[this.o + 28]!;
  }
  get pci_gen(): number {
    return this.p[this.o + 29]!;
  }
  get compute_cap(): number {
    return this.p[this.o + 30]!;
  }
  get has_avx(): number {
    return this.p[this.o + 31]!;
  }
  get gpu_max_power(): number {
    return this.p[this.o + 32]!;
  }
  get gpu_max_temp(): number {
    return this.p[this.o + 33]!;
  }
  get gpu_display_active(): number {
    return this.p[this.o + 34]!;
  }
  get bw_nvlink(): number {
    return this.p[this.o + 35]!;
  }
  get static_ip(): number {
    return this.p[this.o + 36]!;
  }

  get num_gpus(): number {
    return this.p[this.o]!;
  }
  get listed(): number {
    return this.p[this.o + 1]!;
  }
  get listed_until(): number | null {
    const v = this.p[this.o + 2]!;
    return v === v ? v : null;
  }
  get rented(): number {
    return this.p[this.o + 3]!;
  }
  /** While a bid holds the machine, the lowest bid that takes it; null otherwise. */
  get bid_to_win_dph(): number | null {
    const v = this.p[this.o + 26]!;
    return v === v ? v : null;
  }
  get has_heartbeat(): boolean {
    return this.p[this.o + 4] === 1;
  }
  get verified(): number {
    return this.p[this.o + 5]!;
  }
  get direct_port_count(): number {
    return this.p[this.o + 6]!;
  }
  get disk_space(): number {
    return this.p[this.o + 7]!;
  }
  get disk_held_mb(): number {
    return this.p[this.o + 8]!;
  }
  get min_bid_dph(): number {
    return this.p[this.o + 9]!;
  }
  get price_gpu_dph(): number {
    return this.p[this.o + 10]!;
  }
  get price_disk_gb_month(): number {
    return this.p[this.o + 11]!;
  }
  get dlperf(): number {
    return this.p[this.o + 12]!;
  }
  get score(): number {
    return this.p[this.o + 13]!;
  }
  get reliability(): number {
    return this.p[this.o + 14]!;
  }
  get host_id(): number {
    return this.p[this.o + 15]!;
  }
  get gpu_ram(): number {
    return this.p[this.o + 16]!;
  }
  get cpu_cores(): number {
    return this.p[this.o + 17]!;
  }
  get cpu_ghz(): number {
    return this.p[this.o + 18]!;
  }
  get cpu_ram(): number {
    return this.p[this.o + 19]!;
  }
  get disk_bw(): number {
    return this.p[this.o + 20]!;
  }
  get inet_up(): number {
    return this.p[this.o + 21]!;
  }
  get inet_down(): number {
    return this.p[this.o + 22]!;
  }
  get pcie_bw(): number {
    return this.p[this.o + 23]!;
  }
  get cuda_max_good(): number {
    return this.p[this.o + 24]!;
  }
  /** The latest end of the machine's windows not cancelled; NaN when it has none. */
  get maint_until(): number {
    return this.p[this.o + 25]!;
  }
}

/** A predicate's value: 1/0 on SQLite, true/false on PostgreSQL. */
function truthy(v: unknown): boolean {
  return v === true || v === 1;
}

export class OfferIndex {
  private readonly byId = new Map<number, IndexedRow>();
  /**
   * Rows by gpu_name, then num_gpus (the SQL index was on the same pair): a search that pins
   * either scans only those buckets. Scanning costs memory reads per row, so fewer rows is faster.
   */
  private readonly buckets = new Map<string, Map<number, Bucket>>();
  /** One copy of each distinct string (50,000 machines share a few GPU and CPU names). */
  private readonly strings = new Map<string, string>();
  private readonly numbers = new NumberPages();
  /** Where the last sync left off in the machines' changes. */
  private readonly changes: ChangeFeed;
  /**
   * Applies every change committed before this call (the first call loads everything). Calls that
   * arrive while a read is under way share the next read (db/shared-read.ts).
   */
  readonly sync: () => Promise<void> = sharedRead(() => this.read());

  constructor(private readonly store: Store) {
    this.changes = store.dialect.machineChanges(COLUMNS);
  }

  get size(): number {
    return this.byId.size;
  }

  /** The page of rows for a plan, in order (call sync() first). */
  search(plan: SearchPlan, now: number): OfferRow[] {
    const settled = new Set<Condition>();
    return selectPage(this.sources(plan, settled), plan, jsContext(plan, now), settled);
  }

  /**
   * The ids among `ids` (rows of the last sync) of machines that may have a live maintenance
   * window at `now`: a window not cancelled that ends later. The others have none, and their
   * windows need not be read.
   */
  mayHaveWindows(ids: readonly number[], now: number): number[] {
    return ids.filter((id) => {
      const until = this.byId.get(id)?.maint_until;
      return until === undefined || until > now;
    });
  }

  /** The rows that can match: by id, or by GPU name and count when the plan pins them, else all. */
  private sources(plan: SearchPlan, settled: Set<Condition>): RowSource[] {
    // Only eq/in conditions narrow (they must hold); any one of them will do. The rows returned
    // meet it, so it goes into `settled` and is not tested again.
    const pinned = (field: string) => {
      const c = plan.conditions.find((x) => x.field === field && (x.op === 'eq' || x.op === 'in'));
      if (!c) return null;
      settled.add(c);
      return new Set(Array.isArray(c.value) ? c.value : [c.value]);
    };
    const ids = pinned('id') ?? pinned('machine_id');
    if (ids) {
      const rows: OfferRow[] = [];
      for (const id of ids) {
        const r = typeof id === 'number' ? this.byId.get(id) : undefined;
        if (r) rows.push(r);
      }
      return [{ rows }];
    }
    const names = pinned('gpu_name');
    const counts = pinned('num_gpus');
    const out: Bucket[] = [];
    const byCount = names
      ? [...names].map((n) => (typeof n === 'string' ? this.buckets.get(n) : undefined))
      : [...this.buckets.values()];
    for (const m of byCount) {
      if (!m) continue;
      if (!counts) out.push(...m.values());
      else
        for (const n of counts) {
          const b = typeof n === 'number' ? m.get(n) : undefined;
          if (b) out.push(b);
        }
    }
    return out;
  }

  /** Applies the committed changes since the last read (Store.read: off the write path). */
  private read(): Promise<void> {
    return this.changes.next(
      (sqlText, params) => this.store.read(sqlText, params),
      (r) => this.apply(r),
    );
  }

  private apply(r: Raw): void {
    const id = Number(r.id);
    const old = this.byId.get(id);
    if (old) this.remove(old);
    if (truthy(r.deleted)) return;
    const row = new IndexedRow(r, (v) => this.intern(v), this.numbers);
    this.byId.set(id, row);
    let m = this.buckets.get(row.gpu_name);
    if (!m) this.buckets.set(row.gpu_name, (m = new Map<number, Bucket>()));
    let b = m.get(row.num_gpus);
    if (!b) m.set(row.num_gpus, (b = { rows: [], version: 0, views: new Map() }));
    row.slot = b.rows.push(row) - 1;
    b.version++;
  }

  private remove(row: IndexedRow): void {
    this.byId.delete(row.id);
    this.numbers.give(row.n);
    const m = this.buckets.get(row.gpu_name)!;
    const b = m.get(row.num_gpus)!;
    const last = b.rows.pop()!;
    if (last !== row) {
      b.rows[row.slot] = last;
      last.slot = row.slot;
    }
    b.version++;
    if (b.rows.length === 0) m.delete(row.num_gpus);
    if (m.size === 0) this.buckets.delete(row.gpu_name);
  }

  private intern(v: unknown): string {
    const s = textOf(v);
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    this.strings.set(s, s);
    return s;
  }
}
