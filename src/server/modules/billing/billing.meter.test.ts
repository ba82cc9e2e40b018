import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chargeMicros, diskDph, meter } from './billing.meter.js';
import { ACTUAL_STATUSES, INTENDED_STATUSES } from '../../../contract/instance-states.js';

const base = { dph_compute: 3.6, dph_disk: 0.36, billed_until: 1_000_000 };

describe('billing meter', () => {
  it('charges compute to the millisecond only while running and wanted running; disk in every state', () => {
    for (const actual of ACTUAL_STATUSES) {
      for (const intended of INTENDED_STATUSES) {
        const m = meter(
          { ...base, actual_status: actual, intended_status: intended },
          base.billed_until + 10_500,
        );
        expect(m.ms).toBe(10_500);
        expect(m.until).toBe(base.billed_until + 10_500);
        // 3.6 $/h = 1 micro-dollar per ms; 0.36 $/h = 0.1.
        expect(m.computeMicros).toBe(actual === 'running' && intended === 'running' ? 10_500 : 0);
        expect(m.diskMicros).toBe(1_050);
      }
    }
  });

  it('never goes backwards', () => {
    const back = meter(
      { ...base, actual_status: 'running', intended_status: 'running' },
      base.billed_until - 5000,
    );
    expect(back).toEqual({ until: base.billed_until, ms: 0, computeMicros: 0, diskMicros: 0 });
  });

  it('prices disk from $/GB-month over a 720-hour month', () => {
    expect(diskDph(0.1, 720)).toBeCloseTo(0.1, 12);
    const from = 1_767_225_600_000;
    expect(chargeMicros(diskDph(0.1, 20), from, from + 3_600_000)).toBe(Math.round((0.1 * 20 * 1e6) / 720));
  });

  it('a period split anywhere costs exactly what it costs whole, within a micro-dollar of rate × time', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_600_000_000_000, max: 2_100_000_000_000 }),
        fc.array(fc.integer({ min: 0, max: 3_600_000 }), { minLength: 1, maxLength: 20 }),
        fc.double({ min: 0, max: 500, noNaN: true }),
        (start, steps, dph) => {
          let t = start;
          let sum = 0;
          for (const step of steps) {
            sum += chargeMicros(dph, t, t + step);
            t += step;
          }
          expect(sum).toBe(chargeMicros(dph, start, t));
          expect(Math.abs(sum - (dph * 1e6 * (t - start)) / 3_600_000)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it('a 10 GB disk at $0.10/GB-month costs $1.00 over 720 hours, metered every second or every hour', () => {
    const dph = diskDph(0.1, 10);
    for (const everyMs of [1_000, 10_000, 3_600_000]) {
      let billed = 1_767_225_600_123;
      const end = billed + 720 * 3_600_000;
      let micros = 0;
      while (billed < end) {
        const m = meter(
          {
            actual_status: 'stopped',
            intended_status: 'stopped',
            dph_compute: 0.4,
            dph_disk: dph,
            billed_until: billed,
          },
          Math.min(end, billed + everyMs),
        );
        micros += m.computeMicros + m.diskMicros;
        billed = m.until;
      }
      expect(Math.abs(micros - 1_000_000), `every ${everyMs} ms`).toBeLessThanOrEqual(1);
    }
  });
});
