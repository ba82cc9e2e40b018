// The v1 list's order_by and select_cols against a real database: every order column in both
// directions, paged with after_token, against an order computed here from the rows themselves;
// ties (the same price on several instances, one of them a sum that is not exact in binary), NULL
// statuses, composite orders; the projection; bad input refused with nothing changed.
import { beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { offers, renter, jsonQuery } from '../../../../test/helpers/market.js';

type Row = Record<string, unknown> & { id: number };
type Order = { col: string; dir: 'asc' | 'desc' }[];

// The CLI's `show instances-v1` columns, and the ones its `-v` adds.
const CLI_COLS = [
  'id',
  'actual_status',
  'label',
  'num_gpus',
  'gpu_name',
  'gpu_util',
  'disk_space',
  'disk_usage',
  'disk_util',
  'volume_info',
  'dph_total',
  'image_uuid',
  'start_date',
  'verification',
];
const CLI_VERBOSE_COLS = [
  ...CLI_COLS,
  'machine_id',
  'template_id',
  'template_name',
  'geolocation',
  'inet_up',
  'inet_down',
  'ssh_host',
  'ssh_port',
  'status_msg',
];

const ORDER_COLS = [
  'id',
  'machine_id',
  'start_date',
  'label',
  'image_uuid',
  'actual_status',
  'dph_total',
  'disk_space',
  'num_gpus',
  'gpu_name',
  'geolocation',
];

// Per instance: its machine's GPU count, GPU name and location; its compute and disk $/hour, disk
// GB, status, label and image. Strings differ in case and punctuation, where code-point order and
// a linguistic collation disagree; 0.1 + 0.2 and 0.2 + 0.1 are the same double
// (0.30000000000000004), above 0.3 + 0.
type Spec = [number, string, string, [number, number], number, string | null, string, string];
const SPECS: Spec[] = [
  [1, 'RTX 4090', 'US', [0.1, 0.2], 10, null, 'b', 'img/a'],
  [2, 'rtx 4090', 'de', [0.2, 0.1], 20, 'running', 'B', 'Img/b'],
  [1, 'A100', '', [0.3, 0], 10, 'loading', '', 'img/a'],
  [4, 'a100', 'US', [0.5, 0.01], 16.5, null, '_x', '_img'],
  [2, 'RTX_3090', 'CA', [0.5, 0.01], 20, 'exited', 'a', 'img/a'],
  [1, 'A100', 'US', [0.1, 0.2], 0.5, 'running', 'a', 'IMG'],
  [4, 'RTX 4090', 'de', [1, 0], 10, null, 'A', 'img/b'],
  [2, 'A100', 'CA', [0.25, 0.07], 20, 'running', 'b', 'img/c'],
  [1, 'rtx 4090', '', [0.3, 0], 16.5, 'loading', 'B', 'img/a'],
];

/** UTF-8 byte order (= code point order) for strings, numeric order for numbers; null first. */
function compareValues(a: unknown, b: unknown): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

/** The rows in `order`, then by id ascending unless the order names id. */
function sortRows(rows: Row[], order: Order): number[] {
  const keys = order.some((o) => o.col === 'id') ? order : [...order, { col: 'id', dir: 'asc' as const }];
  return [...rows]
    .sort((a, b) => {
      for (const o of keys) {
        const c = compareValues(a[o.col], b[o.col]);
        if (c !== 0) return o.dir === 'desc' ? -c : c;
      }
      return 0;
    })
    .map((r) => r.id);
}

describeEachDb('instances v1 list: order_by and select_cols', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let all: Row[];

  const list = (q: Record<string, unknown>) =>
    t().request('GET', `/api/v1/instances/?${jsonQuery(q)}`, { key });

  /** Every page of `order`, `limit` rows each, followed by next_token: the ids in order. */
  async function pages(order: Order, limit: number, extra: Record<string, unknown> = {}): Promise<number[]> {
    const ids: number[] = [];
    let token: string | null = null;
    for (let n = 0; n < 100; n++) {
      const r = await list({
        order_by: order,
        limit: String(limit),
        ...extra,
        ...(token ? { after_token: token } : {}),
      });
      expect(r.status, r.raw).toBe(200);
      expect(r.body.instances.length).toBeLessThanOrEqual(limit);
      ids.push(...r.body.instances.map((i: Row) => i.id));
      token = r.body.next_token;
      if (token === null) return ids;
      expect(r.body.instances).toHaveLength(limit);
    }
    throw new Error(`${JSON.stringify(order)}: more than 100 pages`);
  }

  beforeAll(async () => {
    const db = t().deps.db;
    if (dialect === 'postgres') {
      // The instances' text columns get ICU's root collation, which orders 'a' before 'B' and '_'
      // before letters: the list's order must come from code points, not from the column.
      const icu = await sql<{
        n: number;
      }>`select count(*)::int as n from pg_collation where collname = 'und-x-icu'`.execute(db);
      if (icu.rows[0]!.n === 1)
        for (const col of ['label', 'image', 'actual_status'])
          await sql`alter table instances alter column ${sql.ref(col)} type text collate "und-x-icu"`.execute(
            db,
          );
    }
    key = (await renter(t())).apiKey;
    // Someone else's instance: never in the caller's list.
    const other = await renter(t());
    const [theirs] = await offers(t(), 1);
    expect(
      (await t().request('PUT', `/api/v0/asks/${theirs}/`, { key: other.apiKey, body: { image: 'x' } }))
        .status,
    ).toBe(200);
    for (const [i, [gpus, gpu, geo, [dph, dphDisk], disk, status, label, image]] of SPECS.entries()) {
      const [machine] = await offers(t(), 1, { numGpus: gpus });
      await db
        .updateTable('machines')
        .set({ gpu_name: gpu, geolocation: geo })
        .where('id', '=', machine!)
        .execute();
      const r = await t().request('PUT', `/api/v0/asks/${machine}/`, { key, body: { image, label } });
      expect(r.status, r.raw).toBe(200);
      await db
        .updateTable('instances')
        .set({ dph_compute: dph, dph_disk: dphDisk, disk, actual_status: status })
        .where('id', '=', r.body.new_contract)
        .execute();
      // Pairs share a start date: ties there too.
      if (i % 2 === 1) t().clock.advance(60_000);
    }
    const r = await list({ limit: '1000' });
    expect(r.status).toBe(200);
    all = r.body.instances;
    expect(all).toHaveLength(SPECS.length);
  });

  it('the rows carry what the test set up (0.1 + 0.2 ties with 0.2 + 0.1, not with 0.3)', () => {
    const totals = all.map((r) => r.dph_total);
    expect(totals.filter((x) => x === 0.1 + 0.2)).toHaveLength(3);
    expect(totals.filter((x) => x === 0.3)).toHaveLength(2);
    expect(all.filter((r) => r.actual_status === null)).toHaveLength(3);
    expect(new Set(all.map((r) => r.start_date)).size).toBe(5);
  });

  it('orders by every column, ascending and descending, each instance exactly once across the pages', async () => {
    for (const col of ORDER_COLS)
      for (const dir of ['asc', 'desc'] as const)
        for (const limit of [1, 2, 4]) {
          const order = [{ col, dir }];
          expect(await pages(order, limit), `${col} ${dir}, ${limit} a page`).toEqual(sortRows(all, order));
        }
  });

  it('orders by several columns, ties broken by id (as given, or ascending)', async () => {
    const orders: Order[] = [
      [
        { col: 'dph_total', dir: 'desc' },
        { col: 'id', dir: 'asc' },
      ],
      [
        { col: 'dph_total', dir: 'asc' },
        { col: 'id', dir: 'desc' },
      ],
      [
        { col: 'gpu_name', dir: 'asc' },
        { col: 'dph_total', dir: 'desc' },
      ],
      [
        { col: 'actual_status', dir: 'desc' },
        { col: 'disk_space', dir: 'asc' },
        { col: 'num_gpus', dir: 'desc' },
      ],
      [
        { col: 'geolocation', dir: 'desc' },
        { col: 'label', dir: 'asc' },
        { col: 'start_date', dir: 'desc' },
        { col: 'image_uuid', dir: 'asc' },
      ],
    ];
    for (const order of orders)
      for (const limit of [1, 3])
        expect(await pages(order, limit), JSON.stringify(order)).toEqual(sortRows(all, order));
  });

  it('puts a NULL actual_status first ascending and last descending, with filters too', async () => {
    const asc = await pages([{ col: 'actual_status', dir: 'asc' }], 2);
    const nulls = all.filter((r) => r.actual_status === null).map((r) => r.id);
    expect(asc.slice(0, nulls.length)).toEqual(nulls);
    const desc = await pages([{ col: 'actual_status', dir: 'desc' }], 2);
    expect(desc.slice(-nulls.length)).toEqual(nulls);
    const filters = { actual_status: { in: [null, 'running'] } };
    const some = all.filter((r) => r.actual_status === null || r.actual_status === 'running');
    for (const dir of ['asc', 'desc'] as const) {
      const order = [{ col: 'actual_status', dir }];
      expect(await pages(order, 2, { select_filters: filters })).toEqual(sortRows(some, order));
    }
  });

  it('select_cols: only the fields asked for that a row has, and id; ["*"] or none for all', async () => {
    const full = all[0]!;
    for (const cols of [CLI_COLS, CLI_VERBOSE_COLS, ['dph_total'], [], ['maintenances', 'no_such_field']]) {
      const r = await list({ select_cols: cols, limit: '1000' });
      expect(r.status, r.raw).toBe(200);
      expect(r.body.instances.map((i: Row) => i.id)).toEqual(all.map((i) => i.id));
      const want = Object.fromEntries(Object.entries(full).filter(([k]) => k === 'id' || cols.includes(k)));
      expect(r.body.instances[0]).toEqual(want);
    }
    // The CLI's columns openrig has, each present (the rest, such as volume_info, absent).
    const cli = (await list({ select_cols: CLI_VERBOSE_COLS })).body.instances[0];
    for (const k of CLI_VERBOSE_COLS.filter(
      (c) => !['volume_info', 'template_id', 'template_name'].includes(c),
    ))
      expect(cli).toHaveProperty(k);
    expect(cli).not.toHaveProperty('volume_info');
    expect(cli).not.toHaveProperty('duration');
    for (const cols of [['*'], ['label', '*']])
      expect((await list({ select_cols: cols, limit: '1000' })).body.instances).toEqual(all);
    expect((await list({ select_cols: '', limit: '1000' })).body.instances).toEqual(all);
    // With paging and an order: the projection does not touch the keys the token carries.
    const ids: number[] = [];
    let token: string | null = null;
    do {
      const r = await list({
        select_cols: ['label'],
        order_by: [{ col: 'dph_total', dir: 'desc' }],
        limit: '2',
        ...(token ? { after_token: token } : {}),
      });
      expect(r.status).toBe(200);
      for (const i of r.body.instances) expect(Object.keys(i).sort()).toEqual(['id', 'label']);
      ids.push(...r.body.instances.map((i: Row) => i.id));
      token = r.body.next_token;
    } while (token);
    expect(ids).toEqual(sortRows(all, [{ col: 'dph_total', dir: 'desc' }]));
  });

  it('refuses bad order_by, select_cols and after_token with 400 {error, msg}, and changes nothing', async () => {
    const dphDesc: Order = [{ col: 'dph_total', dir: 'desc' }];
    const first = await list({ order_by: dphDesc, limit: '2' });
    const token = first.body.next_token as string;
    const tokenOf = (o: string, v: unknown[]) => Buffer.from(JSON.stringify({ o, v })).toString('base64url');
    const cases: [Record<string, unknown>, string][] = [
      [{ order_by: [{ col: 'volume_info', dir: 'asc' }] }, 'dph_total'],
      [{ order_by: [{ col: 'dph_total', dir: 'sideways' }] }, 'dir'],
      [{ select_cols: { id: 1 } }, 'select_cols'],
      [{ select_cols: 'id,label' }, 'select_cols'],
      [{ select_cols: [1] }, 'select_cols'],
      [{ select_cols: ['id', null] }, 'select_cols'],
      [{ select_cols: 'label' }, 'select_cols'],
      [{ select_cols: Array.from({ length: 201 }, (_, i) => `c${i}`) }, 'select_cols'],
      // A token stays bound to the order it was given for.
      [{ order_by: [{ col: 'dph_total', dir: 'asc' }], after_token: token }, 'order_by'],
      [{ after_token: token }, 'order_by'],
      [{ order_by: dphDesc, after_token: tokenOf('dph_total:desc,id:asc', ['0.3', 1]) }, 'after_token'],
      [{ order_by: dphDesc, after_token: tokenOf('dph_total:desc,id:asc', [0.3, 1.5]) }, 'after_token'],
      [{ order_by: dphDesc, after_token: tokenOf('dph_total:desc,id:asc', [null, 1]) }, 'after_token'],
      [
        {
          order_by: [{ col: 'actual_status', dir: 'asc' }],
          after_token: tokenOf('actual_status:asc,id:asc', [null, 1]),
        },
        'after_token',
      ],
      [
        {
          order_by: [{ col: 'num_gpus', dir: 'asc' }],
          after_token: tokenOf('num_gpus:asc,id:asc', [1.5, 1]),
        },
        'after_token',
      ],
    ];
    for (const [q, word] of cases) {
      const r = await list(q);
      expect(r.status, JSON.stringify(q)).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toContain(word);
    }
    const unknown = await list({ order_by: [{ col: 'volume_info', dir: 'asc' }] });
    for (const col of ORDER_COLS) expect(unknown.body.msg).toContain(col);
    // Still the same list, and the token still good for its own order.
    expect((await list({ limit: '1000' })).body.instances).toEqual(all);
    const again = await list({ order_by: dphDesc, limit: '2', after_token: token });
    expect(again.status).toBe(200);
    expect(again.body.instances.map((i: Row) => i.id)).toEqual(sortRows(all, dphDesc).slice(2, 4));
  });
});
