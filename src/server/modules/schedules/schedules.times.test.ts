// Due times of scheduled jobs: on the hour, at an hour of the day, or on a weekday at an hour, UTC.
import { describe, expect, it } from 'vitest';
import { firstRun, nextRun, slotAtOrAfter } from './schedules.times.js';

const at = (iso: string) => Date.parse(iso);
const H = 3_600_000;

describe('scheduled job due times', () => {
  it('HOURLY: the next whole hour, or the time itself when it is one', () => {
    const c = { frequency: 'HOURLY', day_of_the_week: null, hour_of_the_day: null } as const;
    expect(slotAtOrAfter(c, at('2026-11-29T08:43:12Z'))).toBe(at('2026-11-29T09:00:00Z'));
    expect(slotAtOrAfter(c, at('2026-11-29T09:00:00Z'))).toBe(at('2026-11-29T09:00:00Z'));
  });

  it('DAILY: that hour today when still ahead, else tomorrow', () => {
    const c = { frequency: 'DAILY', day_of_the_week: null, hour_of_the_day: 16 } as const;
    expect(slotAtOrAfter(c, at('2026-11-29T08:00:00Z'))).toBe(at('2026-11-29T16:00:00Z'));
    expect(slotAtOrAfter(c, at('2026-11-29T16:00:01Z'))).toBe(at('2026-11-30T16:00:00Z'));
  });

  it('WEEKLY: the weekday (0 = Sunday) at that hour', () => {
    // 2026-11-29 is a Sunday.
    const sun = { frequency: 'WEEKLY', day_of_the_week: 0, hour_of_the_day: 3 } as const;
    expect(slotAtOrAfter(sun, at('2026-11-29T02:00:00Z'))).toBe(at('2026-11-29T03:00:00Z'));
    expect(slotAtOrAfter(sun, at('2026-11-29T04:00:00Z'))).toBe(at('2026-12-06T03:00:00Z'));
    const wed = { frequency: 'WEEKLY', day_of_the_week: 3, hour_of_the_day: 0 } as const;
    expect(slotAtOrAfter(wed, at('2026-11-29T04:00:00Z'))).toBe(at('2026-12-02T00:00:00Z'));
    const sat = { frequency: 'WEEKLY', day_of_the_week: 6, hour_of_the_day: 23 } as const;
    expect(slotAtOrAfter(sat, at('2026-11-29T04:00:00Z'))).toBe(at('2026-12-05T23:00:00Z'));
  });

  it('the first run lies in the window, else there is none', () => {
    const c = { frequency: 'DAILY', day_of_the_week: null, hour_of_the_day: 5 } as const;
    expect(firstRun(c, at('2026-11-29T06:00:00Z'), at('2026-11-30T05:00:00Z'))).toBe(
      at('2026-11-30T05:00:00Z'),
    );
    expect(firstRun(c, at('2026-11-29T06:00:00Z'), at('2026-11-30T04:59:59Z'))).toBeNull();
  });

  it('the next run is after the due one and after now: missed due times are skipped', () => {
    const c = { frequency: 'HOURLY', day_of_the_week: null, hour_of_the_day: null } as const;
    const due = at('2026-11-29T09:00:00Z');
    const end = due + 100 * H;
    expect(nextRun(c, due, due + 5_000, end)).toBe(due + H);
    expect(nextRun(c, due, due + 3 * H + 1, end)).toBe(due + 4 * H);
    expect(nextRun(c, due, due, due + H - 1)).toBeNull();
  });
});
