// The searchable offer fields (documented in docs/market.md).
// Each field has a type (values given as strings are coerced to it), a unit, the SQL that
// computes it over `machines m`, and the same computation in JavaScript over an in-memory row
// (offers.index.ts serves search from memory; searchSql is its reference). Derived fields
// (dph_total, dlperf_per_dphtotal, score, duration) are computed by the same expression for
// filtering, ordering and the reply, so they always agree. The `js` side does the arithmetic in
// the same order as the `sql` side, so the doubles agree bit for bit (both are IEEE doubles; a
// literal such as `720.0` is the same double in both).

import type { Selectable } from 'kysely';
import type { MachinesTable } from '../../db/tables/market.js';
import type { SqlDialect } from '../../db/dialect.js';

export type FieldType = 'int' | 'float' | 'bool' | 'string';

/** What a field's SQL may depend on besides the machine row. */
export interface SqlContext {
  /** The offer's base price expression for the requested `type` ($/h, whole machine). */
  base: string;
  /** allocated_storage in GB, already validated finite and >= 0 (inlined as a literal). */
  storage: number;
  /** Now in epoch ms (inlined as an integer literal). */
  now: number;
  /** The database the SQL runs on: an expression that differs is a function of the dialect. */
  dialect: SqlDialect;
}

/**
 * A machine row as the offer index holds it: only the columns search reads. Deleted machines are
 * not held. `has_heartbeat` is `last_heartbeat_at IS NOT NULL` (heartbeats do not bump a row's
 * version, so the timestamp itself would go stale; its nullness does not).
 */
export type OfferRow = Pick<
  Selectable<MachinesTable>,
  | 'id'
  | 'host_id'
  | 'gpu_name'
  | 'num_gpus'
  | 'gpu_ram'
  | 'cpu_name'
  | 'cpu_cores'
  | 'cpu_ghz'
  | 'cpu_ram'
  | 'disk_space'
  | 'disk_held_mb'
  | 'disk_bw'
  | 'inet_up'
  | 'inet_down'
  | 'pcie_bw'
  | 'direct_port_count'
  | 'cuda_max_good'
  | 'driver_version'
  | 'reliability'
  | 'verified'
  | 'geolocation'
  | 'dlperf'
  | 'listed'
  | 'price_gpu_dph'
  | 'price_disk_gb_month'
  | 'min_bid_dph'
  | 'rented'
  | 'bid_to_win_dph'
  | 'listed_until'
  | 'score'
  | 'online_state'
  | 'gpu_mem_bw'
  | 'total_flops'
  | 'pci_gen'
  | 'compute_cap'
  | 'cpu_arch'
  | 'has_avx'
  | 'ubuntu_version'
  | 'gpu_arch'
  | 'gpu_max_power'
  | 'gpu_max_temp'
  | 'gpu_display_active'
  | 'bw_nvlink'
  | 'mobo_name'
  | 'static_ip'
  | 'verification'
> & {
  has_heartbeat: boolean;
};

/** What a field's JavaScript may depend on besides the row (the SqlContext's counterpart). */
export interface JsContext {
  /** type is bid: the base price is min_bid_dph, else price_gpu_dph * num_gpus. */
  bid: boolean;
  storage: number;
  /** Now in epoch ms, truncated to an integer as the SQL inlines it. */
  now: number;
}

/**
 * A field's value or compareAs number; null stands for SQL NULL (only a compareAs number is NULL
 * today).
 */
export type FieldValue = number | string | boolean | null;

export interface FieldDef {
  type: FieldType;
  unit: string;
  doc: string;
  sql: (c: SqlContext) => string;
  js: (r: OfferRow, c: JsContext) => FieldValue;
  /** The value depends on the time of the search (JsContext.now), not only on the row and the plan. */
  usesNow?: true;
  /** The value depends on the plan's type or allocated_storage (JsContext.bid, .storage). */
  usesPlan?: true;
  /**
   * A second key a string field also matches by: eq and in hold when the value is the field's or
   * its keyOf is the row's key (neq and notin are their negations). The key is compared only with
   * what keyOf returns, so its sql and js need agree only there; it is never NULL.
   */
  alsoMatches?: {
    sql: () => string;
    js: (r: OfferRow) => string;
    /** The key a filter value also matches, or null when it matches the field's value alone. */
    keyOf: (v: string) => string | null;
  };
  /**
   * A number made from the value that filters and orders compare instead of the value itself (the
   * reply keeps the value). Every operator applies. A row whose value makes no number has NULL
   * there: it matches no condition on the field (neq and notin included) and orders first
   * ascending, last descending, on both databases.
   */
  compareAs?: {
    sql: (c: SqlContext) => string;
    js: (r: OfferRow) => number | null;
    /** A filter value's number; null when it gives none (a 400 naming the field). */
    valueOf: (v: unknown) => number | null;
    /** What a filter value must be, as the 400 says it. */
    expects: string;
  };
}

/** What filters and orders compare for a field: its compareAs number, else its value. */
export function compareJs(def: FieldDef): (r: OfferRow, c: JsContext) => FieldValue {
  return def.compareAs ? def.compareAs.js : def.js;
}

/**
 * A plain column: `m.<name>` in SQL, `get` in memory. Each getter is its own function literal
 * (`(r) => r.num_gpus`, not `(r) => r[name]`): a shared keyed read would see every column name and
 * go megamorphic, several times slower over 50,000 rows.
 */
const col = <K extends keyof OfferRow>(name: K, get: (r: OfferRow) => OfferRow[K]) => ({
  sql: (): string => `m.${name}`,
  js: get,
});

/** A machine's verification as clients read it, on offers and on instances alike. */
export function verificationOf(verified: number): 'verified' | 'unverified' {
  return verified === 1 ? 'verified' : 'unverified';
}

/** Open-ended listings report this duration (one year, in seconds). */
export const OPEN_ENDED_DURATION_S = 365 * 86400;

const dphTotal = (c: SqlContext) => `(${c.base} + m.price_disk_gb_month * ${lit(c.storage)} / 720.0)`;
const perDph = (c: SqlContext) => `(CASE WHEN ${dphTotal(c)} > 0 THEN m.dlperf / ${dphTotal(c)} ELSE 0 END)`;
/**
 * An offer's min_bid: the lowest bid that wins the machine now, the host's floor or, while a bid
 * holds the machine, one step above it (machines.bid_to_win_dph, kept by the market).
 */
export const MIN_BID_SQL =
  '(CASE WHEN m.bid_to_win_dph IS NOT NULL AND m.bid_to_win_dph > m.min_bid_dph THEN m.bid_to_win_dph ELSE m.min_bid_dph END)';
const minBidJs = (r: OfferRow): number =>
  r.bid_to_win_dph !== null && r.bid_to_win_dph > r.min_bid_dph ? r.bid_to_win_dph : r.min_bid_dph;
/**
 * Held by an on-demand or owner rental: a machine only a bid holds is not `rented` (an on-demand
 * rental takes it, preempting the bid; a higher bid does too).
 */
const RENTED_SQL = '(m.rented = 1 AND m.bid_to_win_dph IS NULL)';
export const rentedJs = (r: OfferRow): boolean => r.rented === 1 && r.bid_to_win_dph === null;
/** The base price for the search type (searchSql's `base`). */
const baseJs = (r: OfferRow, c: JsContext): number => (c.bid ? minBidJs(r) : r.price_gpu_dph * r.num_gpus);
const dphTotalJs = (r: OfferRow, c: JsContext): number =>
  baseJs(r, c) + (r.price_disk_gb_month * c.storage) / 720;
const perDphJs = (r: OfferRow, c: JsContext): number => {
  const t = dphTotalJs(r, c);
  return t > 0 ? r.dlperf / t : 0;
};
const flopsPerDph = (c: SqlContext) =>
  `(CASE WHEN ${dphTotal(c)} > 0 THEN m.total_flops / ${dphTotal(c)} ELSE 0 END)`;
const flopsPerDphJs = (r: OfferRow, c: JsContext): number => {
  const t = dphTotalJs(r, c);
  return t > 0 ? r.total_flops / t : 0;
};
/**
 * Disk a new renter can have: the machine's disk less what its live instances hold (on an unrented
 * machine: the stopped ones, which release the machine but keep their data there). A stored
 * counter, so search computes no per-row subquery.
 */
export const FREE_DISK_SQL =
  '(m.disk_space - CASE WHEN m.disk_held_mb > 0 THEN m.disk_held_mb / 1000.0 ELSE 0 END)';
export const freeDiskJs = (r: OfferRow): number =>
  r.disk_space - (r.disk_held_mb > 0 ? r.disk_held_mb / 1000 : 0);
const listed = (c: SqlContext) =>
  `(m.listed = 1 AND (m.listed_until IS NULL OR m.listed_until > ${Math.trunc(c.now)}))`;
const listedJs = (r: OfferRow, c: JsContext): boolean =>
  r.listed === 1 && (r.listed_until === null || r.listed_until > c.now);

/**
 * geolocation's country code: a filter value of two ASCII letters (as the CLI sends a code, in the
 * case given) also matches a location that ends in ", " and those letters ("Montreal, CA" for
 * CA): the letters after its last ", ". The key is the location's last four characters, compared
 * only with ", XY" (four ASCII characters), which the SQL (characters) and JavaScript (UTF-16
 * units) agree on. Locations hold no NUL character (PostgreSQL text cannot; SQLite's length()
 * would stop at one).
 */
const GEO_COUNTRY: NonNullable<FieldDef['alsoMatches']> = {
  sql: () => 'substr(m.geolocation, length(m.geolocation) - 3)',
  js: (r) => r.geolocation.slice(-4),
  keyOf: (v) => (/^[A-Za-z]{2}$/.test(v) ? `, ${v}` : null),
};

/**
 * A driver version's number: the text is one to three parts of ASCII digits joined by dots
 * (major, minor, patch; a missing part is 0), the major at most 6 digits and the others at most 3,
 * and its number is major × 1,000,000 + minor × 1,000 + patch ("535.86.05" is 535086005, "550.54"
 * is 550054000, "550" is 550000000). Any other text ("", "n/a", "1.2.3.4", "535.1000.1", " 535")
 * has none (NULL). The bounds keep the number exact and one version's number never another's.
 */
const DRIVER_VERSION = /^([0-9]{1,6})(?:\.([0-9]{1,3}))?(?:\.([0-9]{1,3}))?$/;

function driverVersionNumber(v: string): number | null {
  const m = DRIVER_VERSION.exec(v);
  return m ? Number(m[1]) * 1_000_000 + Number(m[2] ?? 0) * 1_000 + Number(m[3] ?? 0) : null;
}

/** driverVersionNumber in SQL over `m.driver_version` (db/dialect.ts versionNumber). */
function driverVersionSql(c: SqlContext): string {
  return c.dialect.versionNumber('m.driver_version');
}

/** Machines hold a few distinct driver versions: each one's number is worked out once. */
const driverNumbers = new Map<string, number | null>();
function driverNumberOf(r: OfferRow): number | null {
  const v = r.driver_version;
  let n = driverNumbers.get(v);
  if (n === undefined) {
    n = driverVersionNumber(v);
    if (driverNumbers.size >= 10_000) driverNumbers.clear();
    driverNumbers.set(v, n);
  }
  return n;
}

/**
 * A driver_version filter value: a version ("535.86.05", by driverVersionNumber), or, as the
 * official CLI sends one, its number (535086005, or that number as text without a dot).
 */
function driverFilterValue(v: unknown): number | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : null;
  if (typeof v !== 'string') return null;
  const s = v.trim();
  if (s.includes('.')) return driverVersionNumber(s);
  const n = /^[+-]?[0-9]+$/.test(s) ? Number(s) : NaN;
  return Number.isSafeInteger(n) ? n : null;
}

/** A finite number as an SQL literal (callers validate; this refuses anything else). */
export function lit(n: number): string {
  if (!Number.isFinite(n)) throw new Error('not a finite number');
  return Number.isInteger(n) ? `${n}.0` : String(n);
}

export const OFFER_FIELDS: Record<string, FieldDef> = {
  id: {
    type: 'int',
    unit: '',
    doc: 'offer id (the value to rent with; equals machine_id)',
    ...col('id', (r) => r.id),
  },
  machine_id: { type: 'int', unit: '', doc: 'machine id', ...col('id', (r) => r.id) },
  host_id: {
    type: 'int',
    unit: '',
    doc: 'id of the host (the machine owner)',
    ...col('host_id', (r) => r.host_id),
  },
  gpu_name: {
    type: 'string',
    unit: '',
    doc: 'GPU model, with spaces ("RTX 4090"; underscores are read as spaces)',
    ...col('gpu_name', (r) => r.gpu_name),
  },
  num_gpus: { type: 'int', unit: 'GPUs', doc: 'number of GPUs', ...col('num_gpus', (r) => r.num_gpus) },
  gpu_ram: { type: 'int', unit: 'MB', doc: 'memory per GPU', ...col('gpu_ram', (r) => r.gpu_ram) },
  gpu_total_ram: {
    type: 'int',
    unit: 'MB',
    doc: 'gpu_ram × num_gpus',
    sql: () => '(m.gpu_ram * m.num_gpus)',
    js: (r) => r.gpu_ram * r.num_gpus,
  },
  cpu_name: { type: 'string', unit: '', doc: 'CPU model', ...col('cpu_name', (r) => r.cpu_name) },
  cpu_cores: {
    type: 'int',
    unit: 'cores',
    doc: 'CPU cores of the machine',
    ...col('cpu_cores', (r) => r.cpu_cores),
  },
  cpu_cores_effective: {
    type: 'float',
    unit: 'cores',
    doc: 'CPU cores the instance gets (the whole machine is rented)',
    ...col('cpu_cores', (r) => r.cpu_cores),
  },
  cpu_ghz: { type: 'float', unit: 'GHz', doc: 'CPU clock', ...col('cpu_ghz', (r) => r.cpu_ghz) },
  cpu_ram: { type: 'int', unit: 'MB', doc: 'system memory', ...col('cpu_ram', (r) => r.cpu_ram) },
  disk_space: {
    type: 'float',
    unit: 'GB',
    doc: "disk available for the instance (the machine's, less what stopped instances on it hold)",
    sql: () => FREE_DISK_SQL,
    js: freeDiskJs,
  },
  disk_bw: { type: 'float', unit: 'MB/s', doc: 'disk bandwidth', ...col('disk_bw', (r) => r.disk_bw) },
  inet_up: { type: 'float', unit: 'Mbps', doc: 'upload bandwidth', ...col('inet_up', (r) => r.inet_up) },
  inet_down: {
    type: 'float',
    unit: 'Mbps',
    doc: 'download bandwidth',
    ...col('inet_down', (r) => r.inet_down),
  },
  pcie_bw: {
    type: 'float',
    unit: 'GB/s',
    doc: 'PCIe bandwidth per GPU',
    ...col('pcie_bw', (r) => r.pcie_bw),
  },
  direct_port_count: {
    type: 'int',
    unit: 'ports',
    doc: 'directly reachable ports (SSH needs one)',
    ...col('direct_port_count', (r) => r.direct_port_count),
  },
  cuda_max_good: {
    type: 'float',
    unit: 'CUDA version',
    doc: 'highest CUDA version the driver supports',
    ...col('cuda_max_good', (r) => r.cuda_max_good),
  },
  driver_version: {
    type: 'string',
    unit: '',
    doc: 'NVIDIA driver version ("535.86.05"); filtered and ordered by its number major × 1,000,000 + minor × 1,000 + patch (535086005)',
    ...col('driver_version', (r) => r.driver_version),
    compareAs: {
      sql: driverVersionSql,
      js: driverNumberOf,
      valueOf: driverFilterValue,
      expects: 'a driver version ("535.86.05") or its number (535086005)',
    },
  },
  reliability: {
    type: 'float',
    unit: '0..1',
    doc: 'host reliability score',
    ...col('reliability', (r) => r.reliability),
  },
  reliability2: {
    type: 'float',
    unit: '0..1',
    doc: 'same as reliability (the name the CLI sends)',
    ...col('reliability', (r) => r.reliability),
  },
  verified: {
    type: 'bool',
    unit: '',
    doc: 'machine verified by the operator',
    sql: () => '(m.verified = 1)',
    js: (r) => r.verified === 1,
  },
  verification: {
    type: 'string',
    unit: '',
    doc: '"verified", "unverified" or "deverified" (docs/trust.md)',
    // `verified` decides verified (rows written before the three states set only it).
    sql: () =>
      "(CASE WHEN m.verified = 1 THEN 'verified' WHEN m.verification = 'deverified' THEN 'deverified' ELSE 'unverified' END)",
    js: (r) =>
      r.verified === 1 ? 'verified' : r.verification === 'deverified' ? 'deverified' : 'unverified',
  },
  geolocation: {
    type: 'string',
    unit: '',
    doc: 'location as the host gave it ("Oregon, US"); a filter value of two letters also matches the country code after the last ", "',
    ...col('geolocation', (r) => r.geolocation),
    alsoMatches: GEO_COUNTRY,
  },
  dlperf: {
    type: 'float',
    unit: 'DLPerf',
    doc: 'deep-learning performance score of the machine',
    ...col('dlperf', (r) => r.dlperf),
  },
  // Measured by the agent's benchmarks (docs/benchmarks.md); 0 (or "") until a run measured it.
  total_flops: {
    type: 'float',
    unit: 'TFLOPS',
    doc: 'FP16 matrix-multiply throughput of all the GPUs, as benchmarked',
    ...col('total_flops', (r) => r.total_flops),
  },
  gpu_mem_bw: {
    type: 'float',
    unit: 'GB/s',
    doc: 'GPU memory bandwidth per GPU, as benchmarked',
    ...col('gpu_mem_bw', (r) => r.gpu_mem_bw),
  },
  pci_gen: {
    type: 'float',
    unit: 'PCIe gen',
    doc: "PCIe generation of the GPUs' links, as the driver reports it",
    ...col('pci_gen', (r) => r.pci_gen),
  },
  compute_cap: {
    type: 'int',
    unit: '',
    doc: 'CUDA compute capability × 100 (890 for 8.9), as the driver reports it',
    ...col('compute_cap', (r) => r.compute_cap),
  },
  gpu_arch: {
    type: 'string',
    unit: '',
    doc: 'GPU vendor: "nvidia", or "" without a GPU the agent could query',
    ...col('gpu_arch', (r) => r.gpu_arch),
  },
  gpu_max_power: {
    type: 'float',
    unit: 'W',
    doc: 'GPU power limit, as the driver reports it',
    ...col('gpu_max_power', (r) => r.gpu_max_power),
  },
  gpu_max_temp: {
    type: 'float',
    unit: '°C',
    doc: 'GPU slowdown temperature, as the driver reports it',
    ...col('gpu_max_temp', (r) => r.gpu_max_temp),
  },
  gpu_display_active: {
    type: 'bool',
    unit: '',
    doc: 'a display is active on a GPU, as the driver reports it',
    sql: () => '(m.gpu_display_active = 1)',
    js: (r) => r.gpu_display_active === 1,
  },
  bw_nvlink: {
    type: 'float',
    unit: 'GB/s',
    doc: 'NVLink bandwidth per GPU as the driver reports its links (0: none)',
    ...col('bw_nvlink', (r) => r.bw_nvlink),
  },
  cpu_arch: {
    type: 'string',
    unit: '',
    doc: 'CPU architecture ("amd64", "arm64")',
    ...col('cpu_arch', (r) => r.cpu_arch),
  },
  has_avx: {
    type: 'bool',
    unit: '',
    doc: 'the CPU supports AVX',
    sql: () => '(m.has_avx = 1)',
    js: (r) => r.has_avx === 1,
  },
  ubuntu_version: {
    type: 'string',
    unit: '',
    doc: 'Ubuntu release of the host ("22.04"; "" on another system)',
    ...col('ubuntu_version', (r) => r.ubuntu_version),
  },
  mobo_name: {
    type: 'string',
    unit: '',
    doc: 'motherboard model, as the host firmware names it',
    ...col('mobo_name', (r) => r.mobo_name),
  },
  static_ip: {
    type: 'bool',
    unit: '',
    doc: "the host declares its public address static (the agent's --static-ip)",
    sql: () => '(m.static_ip = 1)',
    js: (r) => r.static_ip === 1,
  },
  dph_base: {
    type: 'float',
    unit: '$/h',
    doc: 'compute price for the search type: on-demand and reserved = GPU price × num_gpus; bid = min_bid (the lowest winning bid)',
    sql: (c) => `(${c.base})`,
    js: baseJs,
    usesPlan: true,
  },
  storage_cost: {
    type: 'float',
    unit: '$/GB-month',
    doc: 'disk price',
    ...col('price_disk_gb_month', (r) => r.price_disk_gb_month),
  },
  min_bid: {
    type: 'float',
    unit: '$/h',
    doc: "lowest bid that wins the machine now for an interruptible rental: the host's floor, or just above the running bid (0: no bids)",
    sql: () => MIN_BID_SQL,
    js: minBidJs,
  },
  dph_total: {
    type: 'float',
    unit: '$/h',
    doc: 'dph_base + storage_cost × allocated_storage / 720',
    sql: dphTotal,
    js: dphTotalJs,
    usesPlan: true,
  },
  dlperf_per_dphtotal: {
    type: 'float',
    unit: 'DLPerf per $/h',
    doc: 'dlperf / dph_total (0 when dph_total is 0)',
    sql: perDph,
    js: perDphJs,
    usesPlan: true,
  },
  flops_per_dphtotal: {
    type: 'float',
    unit: 'TFLOPS per $/h',
    doc: 'total_flops / dph_total (0 when dph_total is 0)',
    sql: flopsPerDph,
    js: flopsPerDphJs,
    usesPlan: true,
  },
  score: {
    type: 'float',
    unit: '',
    doc: 'dlperf / (GPU price × num_gpus) × reliability: on-demand and storage-independent, so the default order (score desc) is served by an index',
    // The stored column, as the database computed it (the index holds it as read).
    ...col('score', (r) => r.score),
  },
  duration: {
    type: 'float',
    unit: 's',
    doc: `seconds until the listing ends (${OPEN_ENDED_DURATION_S} for an open-ended listing)`,
    sql: (c) =>
      `(CASE WHEN m.listed_until IS NULL THEN ${lit(OPEN_ENDED_DURATION_S)} ELSE (m.listed_until - ${Math.trunc(c.now)}) / 1000.0 END)`,
    js: (r, c) => (r.listed_until === null ? OPEN_ENDED_DURATION_S : (r.listed_until - c.now) / 1000),
    usesNow: true,
  },
  listed: {
    type: 'bool',
    unit: '',
    doc: 'listed for rent by its host (default filter: true)',
    sql: listed,
    js: listedJs,
    usesNow: true,
  },
  rented: {
    type: 'bool',
    unit: '',
    doc: 'an on-demand or owner rental holds the machine (one only bids hold is not rented; default filter: false)',
    sql: () => RENTED_SQL,
    js: rentedJs,
  },
  rentable: {
    type: 'bool',
    unit: '',
    doc: 'listed, not rented, and its host not offline',
    sql: (c) =>
      `(${listed(c)} AND NOT ${RENTED_SQL} AND NOT (m.online_state = 'offline' AND m.last_heartbeat_at IS NOT NULL))`,
    js: (r, c) => listedJs(r, c) && !rentedJs(r) && !(r.online_state === 'offline' && r.has_heartbeat),
    usesNow: true,
  },
  online: {
    type: 'bool',
    unit: '',
    doc: "the machine's agent is heartbeating",
    sql: () => "(m.online_state = 'online')",
    js: (r) => r.online_state === 'online',
  },
  external: {
    type: 'bool',
    unit: '',
    doc: 'offer from another marketplace: always false here',
    sql: () => '(1 = 0)',
    js: () => false,
  },
  // Constants: what every openrig offer is by construction (docs/market.md says why for each).
  // A number is a CAST, not a bare literal: PostgreSQL refuses a constant in ORDER BY (and takes
  // an integer there for a column position).
  gpu_frac: {
    type: 'float',
    unit: '0..1',
    doc: "share of the machine's GPUs an offer rents: always 1 (an instance rents the whole machine)",
    sql: () => 'CAST(1.0 AS DOUBLE PRECISION)',
    js: () => 1,
  },
  inet_up_cost: {
    type: 'float',
    unit: '$/GB',
    doc: 'upload bandwidth price: always 0 (openrig charges compute and disk only)',
    sql: () => 'CAST(0.0 AS DOUBLE PRECISION)',
    js: () => 0,
  },
  inet_down_cost: {
    type: 'float',
    unit: '$/GB',
    doc: 'download bandwidth price: always 0 (openrig charges compute and disk only)',
    sql: () => 'CAST(0.0 AS DOUBLE PRECISION)',
    js: () => 0,
  },
  datacenter: {
    type: 'bool',
    unit: '',
    doc: 'offer of a certified datacenter: always false (openrig certifies no datacenters)',
    sql: () => '(1 = 0)',
    js: () => false,
  },
  vms_enabled: {
    type: 'bool',
    unit: '',
    doc: 'machine runs virtual-machine instances: always false (instances are containers or processes)',
    sql: () => '(1 = 0)',
    js: () => false,
  },
};

export const OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'notin'] as const;
export type Operator = (typeof OPERATORS)[number];
