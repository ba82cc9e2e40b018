import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AppError } from '../../errors.js';
import {
  MAX_AHEAD_MS,
  parseBatchRequest,
  parseMachineIds,
  parseMachineIdsQuery,
  parseWindow,
} from './maintenance.validate.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const S = NOW / 1000 + 3600;

function fails(fn: () => unknown): [number, string] {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return [e.status, e.message];
    throw e;
  }
  throw new Error('did not throw');
}

describe('maintenance validation', () => {
  it('classifies machine_ids entries in order: ids, invalid, duplicates', () => {
    expect(parseMachineIds([3, '3', 3, 0, 7, 1e20])).toEqual([
      { kind: 'id', id: 3 },
      { kind: 'invalid', raw: '3' },
      { kind: 'duplicate', id: 3 },
      { kind: 'invalid', raw: 0 },
      { kind: 'id', id: 7 },
      { kind: 'invalid', raw: 1e20 },
    ]);
    expect(parseMachineIds(Array.from({ length: 100 }, (_, i) => i + 1))).toHaveLength(100);
    expect(fails(() => parseMachineIds({ 0: 1 }))).toEqual([400, 'machine_ids must be a non-empty list']);
    expect(fails(() => parseMachineIds('1,2'))).toEqual([400, 'machine_ids must be a non-empty list']);
    expect(fails(() => parseMachineIds([null]))).toEqual([400, 'No valid machine_ids provided']);
  });

  it('treats a body that is not an object as one without fields', () => {
    expect(fails(() => parseBatchRequest(undefined, NOW))).toEqual([
      400,
      'machine_ids must be a non-empty list',
    ]);
    expect(fails(() => parseBatchRequest([1, 2], NOW))).toEqual([
      400,
      'machine_ids must be a non-empty list',
    ]);
    expect(fails(() => parseBatchRequest('x', NOW))).toEqual([400, 'machine_ids must be a non-empty list']);
  });

  it('puts the window one effective duration after sdate; the boundaries of "future" and "1 year"', () => {
    expect(parseWindow({ sdate: S }, NOW)).toEqual({
      startMs: S * 1000,
      endMs: S * 1000 + 3_600_000,
      durationHours: 1,
      category: 'other',
    });
    expect(fails(() => parseWindow({ sdate: NOW / 1000 }, NOW))).toEqual([
      422,
      'sdate must be in the future',
    ]);
    expect(parseWindow({ sdate: NOW / 1000 + 0.001 }, NOW).startMs).toBe(NOW + 1);
    expect(parseWindow({ sdate: (NOW + MAX_AHEAD_MS) / 1000 }, NOW).startMs).toBe(NOW + MAX_AHEAD_MS);
    expect(fails(() => parseWindow({ sdate: (NOW + MAX_AHEAD_MS) / 1000 + 0.001 }, NOW))).toEqual([
      422,
      'sdate must be within 1 year',
    ]);
  });

  it('gives the default category to an absent, null or "not provided" one; other values are exact', () => {
    for (const cat of [undefined, null, 'not provided'])
      expect(parseWindow({ sdate: S, maintenance_category: cat }, NOW).category).toBe('other');
    expect(parseWindow({ sdate: S, maintenance_category: 'power' }, NOW).category).toBe('power');
    for (const bad of ['Not Provided', 'not_provided', '', 'POWER'])
      expect(fails(() => parseWindow({ sdate: S, maintenance_category: bad }, NOW))).toEqual([
        400,
        'maintenance_category must be one of: disk, gpu, internet, other, power, software',
      ]);
  });

  it('property: any body either parses to a sane window or throws one of the published errors', () => {
    fc.assert(
      fc.property(
        fc.anything(),
        fc.option(fc.double({ noNaN: false }), { nil: undefined }),
        fc.anything(),
        (dur, sd, cat) => {
          try {
            const w = parseWindow({ sdate: sd, duration: dur, maintenance_category: cat }, NOW);
            expect(w.durationHours).toBeGreaterThanOrEqual(1);
            expect(w.endMs - w.startMs).toBe(Math.round(w.durationHours * 3_600_000));
            expect(w.startMs).toBeGreaterThan(NOW);
            expect(w.startMs).toBeLessThanOrEqual(NOW + MAX_AHEAD_MS);
          } catch (e) {
            expect(e).toBeInstanceOf(AppError);
            expect([400, 422]).toContain((e as AppError).status);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('reads ?machine_ids= as the clients send it', () => {
    expect(parseMachineIdsQuery(undefined)).toBeNull();
    expect(parseMachineIdsQuery('[1,2,2]')).toEqual([1, 2]);
    expect(parseMachineIdsQuery('1, 2')).toEqual([1, 2]);
    expect(parseMachineIdsQuery('[]')).toEqual([]);
    for (const bad of ['[1,', '{"a":1}', '[0]', 'a,b', '[1.5]'])
      expect(fails(() => parseMachineIdsQuery(bad))[0]).toBe(400);
  });
});
