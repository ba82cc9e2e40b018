// When a scheduled job is due: HOURLY on every hour, DAILY at hour_of_the_day:00 UTC, WEEKLY on
// day_of_the_week (0 Sunday … 6 Saturday) at hour_of_the_day:00 UTC. All times epoch ms.
export type Frequency = 'HOURLY' | 'DAILY' | 'WEEKLY';

export interface Cadence {
  frequency: Frequency;
  day_of_the_week: number | null;
  hour_of_the_day: number | null;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** 1970-01-01, day 0 of epoch time, was a Thursday (4). */
const EPOCH_WEEKDAY = 4;

/** The first due time at or after `t`. */
export function slotAtOrAfter(c: Cadence, t: number): number {
  if (c.frequency === 'HOURLY') return Math.ceil(t / HOUR) * HOUR;
  const dayStart = Math.floor(t / DAY) * DAY;
  const hour = (c.hour_of_the_day ?? 0) * HOUR;
  if (c.frequency === 'DAILY') {
    const at = dayStart + hour;
    return at >= t ? at : at + DAY;
  }
  const weekday = (Math.floor(t / DAY) + EPOCH_WEEKDAY) % 7;
  const at = dayStart + (((c.day_of_the_week ?? 0) - weekday + 7) % 7) * DAY + hour;
  return at >= t ? at : at + 7 * DAY;
}

/** A job's first due time in [start, end], or null when the window holds none. */
export function firstRun(c: Cadence, start: number, end: number): number | null {
  const at = slotAtOrAfter(c, start);
  return at <= end ? at : null;
}

/**
 * The due time after the run due at `due`, made at `now`: the first one later than both (due
 * times missed while no server ran are skipped, not run late one after another), or null past
 * `end`.
 */
export function nextRun(c: Cadence, due: number, now: number, end: number): number | null {
  const at = slotAtOrAfter(c, Math.max(due, now) + 1);
  return at <= end ? at : null;
}
