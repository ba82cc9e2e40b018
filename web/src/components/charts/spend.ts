// A renter's spend from the billing history (GET /users/me/invoices): per UTC day of the range
// (every day, 0 when nothing was charged) and per instance. Sums are taken in micro-dollars, as
// the server keeps them, so that a day's total is the sum of its charges exactly.
import type { Invoices } from '../../../../src/contract/api-types';
import type { BarRow } from './BarList';

export const DAY_S = 86_400;

const micros = (usd: number) => Math.round(usd * 1e6);

export interface Spend {
  /** The start of each UTC day of the range, unix seconds. */
  days: number[];
  /** USD charged on each of those days. */
  perDay: number[];
  /** USD charged per instance over the range. */
  perInstance: BarRow[];
}

export function spendOf(h: Invoices, sdate: number, edate: number): Spend {
  const first = Math.floor(sdate / DAY_S) * DAY_S;
  const days: number[] = [];
  for (let d = first; d < edate; d += DAY_S) days.push(d);
  const byDay = new Map<number, number>(days.map((d) => [d, 0]));
  const byInstance = new Map<number, number>();
  for (const it of h.invoices) {
    if (it.type !== 'charge') continue;
    // A charge item is one instance's charges of one UTC day: its start falls in that day.
    const day = Math.floor((it.start ?? it.timestamp) / DAY_S) * DAY_S;
    const m = micros(it.amount);
    if (byDay.has(day)) byDay.set(day, byDay.get(day)! + m);
    if (it.instance_id !== null) byInstance.set(it.instance_id, (byInstance.get(it.instance_id) ?? 0) + m);
  }
  return {
    days,
    perDay: days.map((d) => byDay.get(d)! / 1e6),
    perInstance: [...byInstance].map(([id, m]) => ({ key: id, label: `Instance #${id}`, value: m / 1e6 })),
  };
}
