import { describe, expect, it } from 'vitest';
import { buildSearchBody, parseOrder, parseQuery, SearchQueryError } from './search-query.js';

describe('search query: field op value', () => {
  it('compiles the example of the issue with the default filters and order', () => {
    const body = buildSearchBody('gpu_name=RTX_4090 num_gpus>=2 reliability>0.98');
    expect(body).toEqual({
      verified: { eq: true },
      external: { eq: false },
      rentable: { eq: true },
      rented: { eq: false },
      gpu_name: { eq: 'RTX 4090' },
      num_gpus: { gte: '2' },
      reliability: { gt: '0.98' },
      order: [['score', 'desc']],
      type: 'on-demand',
    });
  });

  it('knows every operator, symbolic and as words', () => {
    const ops = parseQuery(
      'a=1 b==1 c!=1 d>1 e>=1 f<1 g<=1 h eq 1 i neq 1 j gt 1 k gte 1 l lt 1 m lte 1 n in [1,2] o notin [3] p nin [4] q not in [5] r not eq 6',
    ).map((t) => [t.field, t.op]);
    expect(ops).toEqual([
      ['a', 'eq'],
      ['b', 'eq'],
      ['c', 'neq'],
      ['d', 'gt'],
      ['e', 'gte'],
      ['f', 'lt'],
      ['g', 'lte'],
      ['h', 'eq'],
      ['i', 'neq'],
      ['j', 'gt'],
      ['k', 'gte'],
      ['l', 'lt'],
      ['m', 'lte'],
      ['n', 'in'],
      ['o', 'notin'],
      ['p', 'notin'],
      ['q', 'notin'],
      ['r', 'neq'],
    ]);
  });

  it('allows spaces around symbolic operators and quoted values', () => {
    expect(parseQuery('num_gpus >= 2 gpu_name = "RTX 4090"')).toEqual([
      { field: 'num_gpus', op: 'gte', value: '2' },
      { field: 'gpu_name', op: 'eq', value: 'RTX 4090' },
    ]);
  });

  it('converts GB to MB for gpu_ram and cpu_ram (the API is in MB) and honours explicit units', () => {
    expect(buildSearchBody('gpu_ram>=24 cpu_ram>=0.5TB', { noDefault: true })).toMatchObject({
      gpu_ram: { gte: 24_000 },
      cpu_ram: { gte: 500_000 },
    });
    expect(buildSearchBody('gpu_ram>=16000MB gpu_total_ram<=80GB', { noDefault: true })).toMatchObject({
      gpu_ram: { gte: 16_000 },
      gpu_total_ram: { lte: 80_000 },
    });
  });

  it('converts days to seconds for duration (the API is in seconds), with h/m/s/w units', () => {
    expect(buildSearchBody('duration>=3', { noDefault: true })).toMatchObject({ duration: { gte: 259_200 } });
    expect(buildSearchBody('duration>=12h', { noDefault: true })).toMatchObject({
      duration: { gte: 43_200 },
    });
    expect(buildSearchBody('duration>=1w', { noDefault: true })).toMatchObject({
      duration: { gte: 604_800 },
    });
    expect(buildSearchBody('duration>=0.1', { noDefault: true })).toMatchObject({ duration: { gte: 8640 } });
  });

  it('takes disk_space in GB, or TB', () => {
    expect(buildSearchBody('disk_space>=2TB', { noDefault: true })).toMatchObject({
      disk_space: { gte: 2000 },
    });
    expect(buildSearchBody('disk_space>=200', { noDefault: true })).toMatchObject({
      disk_space: { gte: 200 },
    });
  });

  it('reads booleans, null, lists, and keeps other numbers as the strings typed', () => {
    const b = buildSearchBody('verified=false geolocation in [US,CA] cuda_max_good>=12.1 host_id=null', {
      noDefault: true,
    });
    expect(b).toMatchObject({
      verified: { eq: false },
      geolocation: { in: ['US', 'CA'] },
      cuda_max_good: { gte: '12.1' },
      host_id: { eq: null },
    });
  });

  it('lets a term replace a default filter, and `any` drop it', () => {
    const b = buildSearchBody('rented=any verified=false');
    expect(b.rented).toBeUndefined();
    expect(b.verified).toEqual({ eq: false });
    expect(b.rentable).toEqual({ eq: true });
  });

  it('combines several terms on one field', () => {
    expect(buildSearchBody('num_gpus>=2 num_gpus<=4', { noDefault: true })).toMatchObject({
      num_gpus: { gte: '2', lte: '4' },
    });
  });

  it('maps the short field names people type', () => {
    expect(buildSearchBody('dph<0.5 cuda_vers>=12', { noDefault: true })).toMatchObject({
      dph_total: { lt: '0.5' },
      cuda_max_good: { gte: '12' },
    });
  });

  it.each([
    ['num_gpus', 'expected an operator'],
    ['num_gpus>=', 'missing value'],
    ['>=2', 'expected a field name'],
    ['gpu_ram>=lots', 'is not a number'],
    ['gpu_ram>=24PB', 'unknown unit'],
    ['num_gpus=[1,2]', 'needs the in or notin'],
    ['geolocation in [US', 'unterminated list'],
    ['gpu_name="RTX', 'unterminated quote'],
  ])('rejects %s clearly', (q, msg) => {
    expect(() => buildSearchBody(q)).toThrow(SearchQueryError);
    expect(() => buildSearchBody(q)).toThrow(msg);
  });

  it('an empty query is just the defaults', () => {
    expect(Object.keys(buildSearchBody(''))).toEqual([
      'verified',
      'external',
      'rentable',
      'rented',
      'order',
      'type',
    ]);
  });
});

describe('search options', () => {
  it('parses -o with - for descending and several fields', () => {
    expect(parseOrder('dph_total')).toEqual([['dph_total', 'asc']]);
    expect(parseOrder('score-')).toEqual([['score', 'desc']]);
    expect(parseOrder('num_gpus-, dph+')).toEqual([
      ['num_gpus', 'desc'],
      ['dph_total', 'asc'],
    ]);
    expect(() => parseOrder('dph total')).toThrow(SearchQueryError);
  });

  it('sets type, limit and allocated_storage', () => {
    expect(
      buildSearchBody('', { type: 'interruptible', limit: 5, storage: 20, order: 'dph_total' }),
    ).toMatchObject({
      type: 'bid',
      limit: 5,
      allocated_storage: 20,
      order: [['dph_total', 'asc']],
    });
    expect(buildSearchBody('', { type: 'reserved' }).type).toBe('reserved');
    expect(() => buildSearchBody('', { type: 'spot' })).toThrow('--type');
    expect(() => buildSearchBody('', { limit: 0 })).toThrow('--limit');
  });
});
