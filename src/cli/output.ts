// Human output of the user CLI: aligned tables, units, relative times. Pure functions; the
// commands write what they return. `--raw` bypasses all of this and prints the server's JSON.
import { textOf } from '../contract/text.js';

export interface Column<T> {
  header: string;
  get: (row: T) => string;
  /** Numbers read best right-aligned. */
  align?: 'left' | 'right';
  /** When the table is wider than the terminal, columns are dropped in this order (1 first). */
  drop?: number;
  /** May be cut short (with …) when dropping columns is not enough. */
  shrink?: boolean;
}

const GAP = 2;
const MIN_SHRUNK = 8;

/**
 * Columns padded to their widest cell; two spaces between; no trailing spaces. With `maxWidth`
 * (the terminal's width) the least useful columns are dropped, then the shrinkable ones cut
 * short, until a line fits; without it (`--wide`, or output that is not a terminal) every
 * column is printed in full.
 */
export function table<T>(rows: T[], allColumns: Column<T>[], maxWidth?: number): string {
  let columns = allColumns;
  let cells = rows.map((r) => columns.map((c) => clean(c.get(r))));
  let widths = columns.map((c, i) => Math.max(width(c.header), ...cells.map((row) => width(row[i]!))));
  const total = () => widths.reduce((a, b) => a + b, 0) + GAP * Math.max(0, widths.length - 1);
  if (maxWidth !== undefined && maxWidth > 0) {
    const droppable = columns
      .map((c, i) => ({ c, i }))
      .filter((x) => x.c.drop !== undefined)
      .sort((a, b) => a.c.drop! - b.c.drop!);
    const dropped = new Set<number>();
    for (const d of droppable) {
      if (total() - [...dropped].reduce((a, i) => a + widths[i]! + GAP, 0) <= maxWidth) break;
      dropped.add(d.i);
    }
    if (dropped.size > 0) {
      columns = columns.filter((_, i) => !dropped.has(i));
      cells = cells.map((row) => row.filter((_, i) => !dropped.has(i)));
      widths = widths.filter((_, i) => !dropped.has(i));
    }
    // Still too wide: cut the widest shrinkable column, repeatedly, down to MIN_SHRUNK.
    for (;;) {
      const over = total() - maxWidth;
      if (over <= 0) break;
      let k = -1;
      columns.forEach((c, i) => {
        if (c.shrink && widths[i]! > MIN_SHRUNK && (k < 0 || widths[i]! > widths[k]!)) k = i;
      });
      if (k < 0) break;
      widths[k] = Math.max(MIN_SHRUNK, widths[k]! - over);
      cells = cells.map((row) => row.map((v, i) => (i === k ? cut(v, widths[k]!) : v)));
    }
  }
  const line = (vals: string[]) =>
    vals
      .map((v, i) =>
        columns[i]!.align === 'right'
          ? v.padStart(widths[i]! + v.length - width(v))
          : v.padEnd(widths[i]! + v.length - width(v)),
      )
      .join('  ')
      .replace(/\s+$/, '');
  // The last resort, when every column left is one that is never dropped or cut: the line is
  // cut at the edge (with …), so a terminal never wraps a row.
  const fit = (l: string) => (maxWidth !== undefined && maxWidth > 0 ? cut(l, maxWidth) : l);
  return [line(columns.map((c) => c.header)), ...cells.map(line)].map(fit).join('\n') + '\n';
}

/** A line of plain text cut to a terminal's width (with …); as it is without a width. */
export function fitLine(s: string, maxWidth?: number): string {
  return maxWidth !== undefined && maxWidth > 0 ? cut(s, maxWidth) : s;
}

function cut(s: string, w: number): string {
  const chars = [...s];
  return chars.length <= w ? s : chars.slice(0, w - 1).join('') + '…';
}

/** `key: value` lines with the keys aligned. */
export function keyValues(pairs: [string, string][]): string {
  const w = Math.max(0, ...pairs.map(([k]) => k.length));
  return (
    pairs.map(([k, v]) => `${(k + ':').padEnd(w + 1)} ${clean(v)}`.replace(/\s+$/, '')).join('\n') + '\n'
  );
}

/** Control characters from the server never reach the terminal (no escape-sequence injection). */
function clean(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}

function width(s: string): number {
  return [...s].length;
}

export const DASH = '-';

export function fmtNum(n: unknown, digits = 0): string {
  if (typeof n === 'string' && n.trim() !== '' && Number.isFinite(Number(n))) n = Number(n);
  if (typeof n !== 'number' || !Number.isFinite(n)) return DASH;
  return n.toFixed(digits);
}

/** Dollars: `$0.512/h`-style callers add the suffix. Small prices keep three decimals. */
export function fmtUsd(n: unknown, digits = 3): string {
  const s = fmtNum(n, digits);
  return s === DASH ? s : `$${s}`;
}

/** MB on the wire shown as GB (the API's gpu_ram and cpu_ram are MB). */
export function fmtMbAsGb(mb: unknown): string {
  const s = fmtNum(
    typeof mb === 'number' ? mb / 1000 : mb === null || mb === undefined ? mb : Number(mb) / 1000,
    1,
  );
  return s === DASH ? s : `${s} GB`;
}

export function fmtGb(gb: unknown, digits = 0): string {
  const s = fmtNum(gb, digits);
  return s === DASH ? s : `${s} GB`;
}

export function fmtPercent(fraction: unknown, digits = 1): string {
  const s = fmtNum(typeof fraction === 'number' ? fraction * 100 : fraction, digits);
  return s === DASH ? s : `${s}%`;
}

/** Elapsed or remaining time, compact: `45s`, `3m 20s`, `2h 5m`, `3d 4h`. */
export function fmtDuration(seconds: number): string {
  let s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86_400);
  s -= d * 86_400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return s > 0 ? `${m}m ${s}s` : `${m}m`;
  return `${s}s`;
}

/** `5m ago`, `in 2h 30m`, `just now`; epoch seconds in, `-` for none. */
export function relativeTime(epochS: unknown, nowMs: number): string {
  if (typeof epochS !== 'number' || !Number.isFinite(epochS) || epochS <= 0) return DASH;
  const diff = epochS - nowMs / 1000;
  if (Math.abs(diff) < 5) return 'just now';
  return diff < 0 ? `${fmtDuration(-diff)} ago` : `in ${fmtDuration(diff)}`;
}

/** `2026-11-23 14:00 UTC`: maintenance windows are stated in UTC (the e-mails say UTC too). */
export function utcTime(epochS: unknown): string {
  if (typeof epochS !== 'number' || !Number.isFinite(epochS)) return DASH;
  return new Date(epochS * 1000).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
}

export function str(v: unknown): string {
  if (v === null || v === undefined || v === '') return DASH;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'object' || typeof v === 'function') return JSON.stringify(v) ?? DASH;
  return textOf(v);
}

/** Spinner frames for the wait loop (drawn only on a TTY). */
export const SPINNER = ['|', '/', '-', '\\'];

export function spinnerLine(frame: number, text: string): string {
  return `\r\u001b[2K${SPINNER[frame % SPINNER.length]} ${text}`;
}
