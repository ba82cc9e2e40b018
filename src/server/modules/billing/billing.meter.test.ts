import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chargeMicros, diskDph, meter } from './billing.meter.js';
import { ACTUAL_STATUSES, INTENDED_STATUSES } from '../../../contract/instance-states.js';

const base = { dph_compute: 3.6, dph_disk: 0.36, billed_until: 1_000_000 };

describe('billing meter', () => {
  it('charges compute per whole second only while running and wanted running; disk in every state', () => {
    for (const actual of ACTUAL_STATUSES) {
      for (const intended of INTENDED_STATUSES) {
        const m = meter(
          { ...base, actual_status: actual, intended_status: intended },
          base.billed_until + 10_500,
        );
        expect(m.seconds).toBe(10);
        expect(m.until).toBe(base.billed_until + 10_000);
        // 3.6 $/h = 1000 micro-dollars per second; 0.36 $/h = 100.
        expect(m.computeMicros).toBe(actual === 'running' && intended === 'running' ? 10_000 : 0);
        expect(m.diskMicros).toBe(1_000);
      }
    }
  });

  it('charges nothing for less than a second and never goes backwards', () => {
    const m = meter(
      { ...base, actual_status: 'running', intended_status: 'running' },
      base.billed_until + 999,
    );
    expect(m).toEqual({ until: base.billed_until, seconds: 0, computeMicros: 0, diskMicros: 0 });
    const back = meter(
      { ...base, actual_status: 'running', intended_status: 'running' },
      base.billed_until - 5000,
    );
    expect(back.seconds).toBe(0);
  });

  it('prices disk from $/GB-month over a 720-hour month', () => {
    expect(diskDph(0.1, 720)).toBeCloseTo(0.1, 12);
    expect(chargeMicros(diskDph(0.1, 20), 3600)).toBe(Math.round((0.1 * 20 * 1e6) / 720));
  });

  it('splitting a period never changes the total by more than a micro-dollar per split', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 1, max: 10 }),
        fc.double({ min: 0, max: 50, noNaN: true }),
        (secs, parts, dph) => {
          const whole = chargeMicros(dph, secs);
          let sum = 0;
          let left = secs;
          for (let i = 0; i < parts; i++) {
            const s = i === parts - 1 ? left : Math.floor(secs / parts);
            sum += chargeMicros(dph, s);
            left -= s;
          }
          expect(Math.abs(sum - whole)).toBeLessThanOrEqual(parts);
        },
      ),
    );
  });
});
