// The search-filter compiler, pure: every field of the offer table, every
// operator, coercion of string values, and a 400 naming whatever is wrong.
import { describe, expect, it } from 'vitest';
import { AppError } from '../../errors.js';
import { OFFER_FIELDS, OPERATORS } from './offers.fields.js';
import { postgres, sqlite } from '../../db/dialect.js';
import { DEFAULT_LIMIT, MAX_LIMIT, coerce, compileSearch, searchSql } from './offers.filter.js';
import { REFUSED_FIELDS } from './offers.refused-fields.js';

// The fields the established CLI's `search offers` help lists beyond the ones above: each is
// served (its value known for every openrig offer) or refused with its reason, never unknown.
const CLI_HELP_FIELDS = [
  'bw_nvlink',
  'compute_cap',
  'cpu_arch',
  'datacenter',
  'flops_per_dphtotal',
  'gpu_arch',
  'gpu_max_power',
  'gpu_max_temp',
  'gpu_mem_bw',
  'gpu_frac',
  'gpu_display_active',
  'has_avx',
  'inet_up_cost',
  'inet_down_cost',
  'pci_gen',
  'static_ip',
  'total_flops',
  'ubuntu_version',
  'vms_enabled',
];

const COMPAT_FIELDS = [
  'id',
  'cuda_max_good',
  'num_gpus',
  'gpu_name',
  'pcie_bw',
  'cpu_ghz',
  'cpu_cores_effective',
  'cpu_ram',
  'gpu_ram',
  'disk_space',
  'dph_total',
  'dlperf',
  'dlperf_per_dphtotal',
  'score',
  'driver_version',
  'inet_up',
  'inet_down',
  'reliability',
  'duration',
  'machine_id',
  'verification',
  'host_id',
  'direct_port_count',
  'geolocation',
];

function badRequest(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    expect((err as AppError).code).toBe('bad_request');
    return err as AppError;
  }
  throw new Error('expected a 400');
}

const sample: Record<string, [unknown, unknown]> = {
  int: ['3', 3],
  float: ['0.98', 0.98],
  bool: ['true', true],
  string: [42, '42'],
};

describe('search filter compiler', () => {
  it('knows every offer field the established CLI shows, plus the default filters', () => {
    for (const f of [...COMPAT_FIELDS, 'verified', 'external', 'rentable', 'rented'])
      expect(OFFER_FIELDS).toHaveProperty(f);
  });

  for (const [field, def] of Object.entries(OFFER_FIELDS)) {
    for (const op of OPERATORS) {
      const ordered = op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte';
      const applies = !ordered || def.type === 'int' || def.type === 'float' || !!def.compareAs;
      it(`${field} ${op} ${applies ? 'compiles' : 'is refused'}`, () => {
        // A field compared by a number takes a value that makes the number.
        const [raw, want] = def.compareAs ? ['535.86.05', 535086005] : sample[def.type]!;
        const value = op === 'in' || op === 'notin' ? [raw] : raw;
        if (!applies) {
          expect(badRequest(() => compileSearch({ [field]: { [op]: value } })).message).toContain(field);
          return;
        }
        const plan = compileSearch({ [field]: { [op]: value } });
        expect(plan.conditions).toEqual([
          { field, op, value: op === 'in' || op === 'notin' ? [want] : want },
        ]);
        for (const d of [sqlite, postgres]) {
          const q = searchSql(plan, d, 1_700_000_000_000);
          expect(q.sql).toMatch(
            /^SELECT .* FROM machines m WHERE m\.id IN \(SELECT m\.id FROM machines m WHERE .* ORDER BY .* LIMIT 64\) ORDER BY .*$/,
          );
          expect(q.params.length).toBe(def.type === 'bool' ? 0 : 1);
        }
      });
    }
  }

  it('coerces strings to the field type and refuses what cannot be', () => {
    expect(coerce('num_gpus', OFFER_FIELDS.num_gpus!, ' 2 ')).toBe(2);
    expect(coerce('num_gpus', OFFER_FIELDS.num_gpus!, '2.0')).toBe(2);
    expect(coerce('reliability', OFFER_FIELDS.reliability!, '1e-1')).toBe(0.1);
    expect(coerce('verified', OFFER_FIELDS.verified!, 'False')).toBe(false);
    expect(coerce('verified', OFFER_FIELDS.verified!, 1)).toBe(true);
    expect(coerce('gpu_name', OFFER_FIELDS.gpu_name!, 'RTX_4090')).toBe('RTX 4090');
    for (const [field, v] of [
      ['num_gpus', '2.5'],
      ['num_gpus', ''],
      ['num_gpus', true],
      ['reliability', 'high'],
      ['reliability', null],
      ['verified', 'yes'],
      ['gpu_name', {}],
      ['gpu_name', true],
    ] as const) {
      expect(badRequest(() => coerce(field, OFFER_FIELDS[field]!, v)).message).toContain(field);
    }
  });

  it('driver_version: a dotted version or its number (as the CLI sends it), any other value a 400', () => {
    const dv = OFFER_FIELDS.driver_version!;
    expect(coerce('driver_version', dv, 535086005)).toBe(535086005);
    expect(coerce('driver_version', dv, '535.86.05')).toBe(535086005);
    expect(coerce('driver_version', dv, ' 535.86.05 ')).toBe(535086005);
    expect(coerce('driver_version', dv, '470.199.02')).toBe(470199002);
    expect(coerce('driver_version', dv, '550.54')).toBe(550054000);
    // Without a dot, text is the number itself (the CLI sends "=" values as text).
    expect(coerce('driver_version', dv, '535086005')).toBe(535086005);
    expect(coerce('driver_version', dv, '550')).toBe(550);
    for (const v of [
      'abc',
      '',
      '535.86.05.1',
      '535.1000.1',
      '535.',
      '.86',
      '535..1',
      '5e8',
      535.86,
      true,
      null,
      {},
    ]) {
      const msg = badRequest(() => coerce('driver_version', dv, v)).message;
      expect(msg, JSON.stringify(v)).toContain('driver_version');
      expect(msg).toContain('driver version');
    }
    expect(compileSearch({ driver_version: { gte: 535086005, lt: '550.0.0' } }).conditions).toEqual([
      { field: 'driver_version', op: 'gte', value: 535086005 },
      { field: 'driver_version', op: 'lt', value: 550000000 },
    ]);
    expect(compileSearch({ driver_version: { in: ['535.86.05', 470199002] } }).conditions[0]!.value).toEqual([
      535086005, 470199002,
    ]);
  });

  it('driver_version: conditions and orders compare its number, as an integer parameter', () => {
    for (const d of [sqlite, postgres]) {
      const q = searchSql(
        compileSearch({ driver_version: { gte: 535086005 }, order: [['driver_version', 'desc']] }),
        d,
        0,
      );
      const where = q.sql.split('FROM machines m WHERE ')[2]!.split(' ORDER BY ')[0]!;
      expect(where).not.toContain('m.driver_version >=');
      expect(where).toMatch(d === postgres ? / END\) >= \$1::bigint/ : / END\) >= \?/);
      expect(q.sql).toContain('END) DESC NULLS LAST, m.id ASC');
      expect(q.params).toEqual([535086005]);
      // The reply still selects the text.
      expect(q.sql).toContain('m.driver_version AS driver_version');
    }
  });

  it('names an unknown field, operator, order field, direction or type', () => {
    expect(badRequest(() => compileSearch({ gpu_nmae: { eq: 'x' } })).message).toContain('gpu_nmae');
    expect(badRequest(() => compileSearch({ num_gpus: { between: [1, 2] } })).message).toContain('between');
    expect(badRequest(() => compileSearch({ num_gpus: {} })).message).toContain('num_gpus');
    expect(badRequest(() => compileSearch({ num_gpus: { in: '1,2' } })).message).toContain('num_gpus');
    expect(badRequest(() => compileSearch({ num_gpus: { eq: [1] } })).message).toContain('num_gpus');
    expect(badRequest(() => compileSearch({ order: [['flops', 'desc']] })).message).toContain('flops');
    expect(badRequest(() => compileSearch({ order: [['score', 'up']] })).message).toContain('up');
    expect(badRequest(() => compileSearch({ order: 'score' })).message).toContain('order');
    expect(badRequest(() => compileSearch({ type: 'spot' })).message).toContain('spot');
    expect(badRequest(() => compileSearch({ limit: MAX_LIMIT + 1 })).message).toContain('limit');
    expect(badRequest(() => compileSearch({ limit: 'ten' })).message).toContain('limit');
    expect(badRequest(() => compileSearch({ allocated_storage: -1 })).message).toContain('allocated_storage');
    expect(badRequest(() => compileSearch([])).message).toContain('object');
    expect(badRequest(() => compileSearch({ __proto__x: { eq: 1 } })).message).toContain('__proto__x');
  });

  it("serves or refuses (naming it and why) each field of the CLI's help; never both", () => {
    for (const f of CLI_HELP_FIELDS) {
      const served = Object.hasOwn(OFFER_FIELDS, f);
      expect(served !== Object.hasOwn(REFUSED_FIELDS, f), f).toBe(true);
      if (served) continue;
      const msg = badRequest(() => compileSearch({ [f]: { eq: '1' } })).message;
      expect(msg).toBe(
        `Search field "${f}" is not supported by openrig: it does not record ${REFUSED_FIELDS[f]}`,
      );
      expect(badRequest(() => compileSearch({ order: [[f, 'desc']] })).message).toContain(
        `Order field "${f}"`,
      );
    }
    for (const f of Object.keys(REFUSED_FIELDS)) expect(OFFER_FIELDS).not.toHaveProperty(f);
    expect(OFFER_FIELDS.gpu_frac!.js({} as never, { bid: false, storage: 0, now: 0 })).toBe(1);
  });

  it('geolocation: a two-letter value also matches the code after the last ", " (one parameter each)', () => {
    const where = (body: unknown) => {
      const q = searchSql(compileSearch(body), postgres, 0);
      return { where: q.sql.split('FROM machines m WHERE ')[2]!.split(' ORDER BY ')[0]!, params: q.params };
    };
    const key = 'substr(m.geolocation, length(m.geolocation) - 3)';
    expect(where({ geolocation: 'CA' })).toEqual({
      where: expect.stringContaining(` AND (m.geolocation = $1::text OR ${key} = $2::text) AND `),
      params: ['CA', ', CA'],
    });
    expect(where({ geolocation: { notin: ['NO', 'Oslo, NO', 'NO'] } })).toEqual({
      where: expect.stringContaining(
        `NOT (m.geolocation IN ($1::text, $2::text, $3::text) OR ${key} = $4::text)`,
      ),
      params: ['NO', 'Oslo, NO', 'NO', ', NO'],
    });
    // No code among the values: the location alone.
    expect(where({ geolocation: { neq: 'Canada' } })).toEqual({
      where: expect.stringContaining('NOT (m.geolocation = $1::text)'),
      params: ['Canada'],
    });
  });

  it('defaults: order score desc, on-demand, limit 64, 5 GB, unrented listed machines only', () => {
    const plan = compileSearch({});
    expect(plan).toEqual({
      conditions: [],
      order: [{ field: 'score', dir: 'desc' }],
      type: 'on-demand',
      limit: DEFAULT_LIMIT,
      storage: 5,
    });
    const q = searchSql(plan, sqlite, 0);
    expect(q.sql).toContain('m.rented = 0');
    expect(q.sql).toContain('m.listed = 1');
    expect(q.sql).toContain('m.deleted_at IS NULL');
  });

  it('drops the implicit rented/listed filters only when the filter names them', () => {
    const where = (body: unknown) =>
      searchSql(compileSearch(body), sqlite, 0)
        .sql.split('FROM machines m WHERE ')[2]!
        .split(' ORDER BY ')[0]!;
    expect(where({ rented: { eq: true } })).not.toContain('m.rented = 0');
    expect(where({ rented: { eq: true } })).toContain('(m.rented = 1 AND m.bid_to_win_dph IS NULL)');
    expect(where({ rented: { eq: true } })).toContain('m.listed = 1');
    expect(where({ listed: { eq: false } })).toContain('NOT (m.listed = 1');
    expect(where({ listed: { eq: false } })).toContain(
      'AND (m.rented = 0 OR m.bid_to_win_dph IS NOT NULL) AND',
    );
    // Naming rentable drops both implicit filters: its own condition follows the fixed ones.
    expect(where({ rentable: { eq: false } })).toMatch(
      /^m\.deleted_at IS NULL AND m\.disk_space >= 5\.0 AND NOT \(\(m\.listed = 1/,
    );
    // The free disk (less stopped instances) is tested last, after the cheap conditions.
    expect(where({ rentable: { eq: false } })).toMatch(
      / AND \(m\.disk_space - CASE WHEN m\.disk_held_mb > 0 .*\) >= 5\.0$/,
    );
  });

  it('parses several order fields, multi-op ranges, limit and type aliases', () => {
    const plan = compileSearch({
      num_gpus: { gte: '1', lte: '4' },
      order: [
        ['dph_total', 'ASC'],
        ['score', 'desc'],
      ],
      limit: '10',
      type: 'interruptible',
      allocated_storage: '20',
    });
    expect(plan.conditions).toHaveLength(2);
    expect(plan.order).toEqual([
      { field: 'dph_total', dir: 'asc' },
      { field: 'score', dir: 'desc' },
    ]);
    expect(plan).toMatchObject({ limit: 10, type: 'bid', storage: 20 });
    const q = searchSql(plan, postgres, 0);
    expect(q.sql).toContain('$1::bigint');
    expect(q.sql).toContain('$2::bigint');
    expect(q.sql).toContain('m.min_bid_dph > 0');
    expect(q.params).toEqual([1, 4]);
  });

  it('accepts the older {"q": {...}} wrapper and a bare value as eq', () => {
    expect(compileSearch({ q: { num_gpus: 2 } }).conditions).toEqual([
      { field: 'num_gpus', op: 'eq', value: 2 },
    ]);
  });

  it('never puts a value into the SQL text', () => {
    const q = searchSql(compileSearch({ gpu_name: { eq: "x'; drop table machines; --" } }), sqlite, 0);
    expect(q.sql).not.toContain('drop table');
    expect(q.params).toEqual(["x'; drop table machines; --"]);
  });
});
