// Maintenance request validation (pure; docs/maintenance.md). The order of checks is fixed and
// tested: the fields in the order the published request lists them, each fully before the next:
//   1. machine_ids: a non-empty list (400) → at most 100 entries (400) → at least one valid ID (400)
//   2. sdate: present (422) → a number (422) → in the future (422) → within 1 year (422)
//   3. duration: absent/null → 1; else a positive number (400), at most 8760 (400); below 1 → 1
//   4. maintenance_category: absent/null/"not provided" → other; else one of the six values (400)
// Ownership is decided afterwards, in the transaction (maintenance.service).
import type { MaintenanceCategory } from '../../db/tables/maintenance.js';
import { MaintenanceErrors as E } from './maintenance.errors.js';

export const CATEGORIES: readonly MaintenanceCategory[] = [
  'power',
  'internet',
  'disk',
  'gpu',
  'software',
  'other',
];
export const MAX_MACHINE_IDS = 100;
/** "within 1 year": 365 days of 86,400 s after now. */
export const MAX_AHEAD_MS = 365 * 86_400_000;
/** Minimum effective duration 1 hour, default 1. */
export const MIN_DURATION_HOURS = 1;
/** Our own limit: a window longer than a year is refused (keeps end times finite and sane). */
export const MAX_DURATION_HOURS = 8760;
const HOUR_MS = 3_600_000;
/**
 * The official CLI sends this literal string when its user gave no category; it means "no
 * category" and gets the same default as an absent field.
 */
export const CATEGORY_NOT_GIVEN = 'not provided';

export interface WindowSpec {
  startMs: number;
  endMs: number;
  /** Effective hours (at least 1). */
  durationHours: number;
  category: MaintenanceCategory;
}

export type IdEntry =
  | { kind: 'id'; id: number }
  /** Not a positive integer: reported per entry as `invalid_id`. */
  | { kind: 'invalid'; raw: unknown }
  /** Repeats an ID earlier in the list: reported per entry as `duplicate`; processed once. */
  | { kind: 'duplicate'; id: number };

export function isMachineId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === 'object' && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

/** Step 1. Entries in submitted order; throws the published 400s. */
export function parseMachineIds(raw: unknown): IdEntry[] {
  if (!Array.isArray(raw) || raw.length === 0) throw E.idsNotList();
  if (raw.length > MAX_MACHINE_IDS) throw E.idsTooMany();
  const seen = new Set<number>();
  const entries = raw.map((v): IdEntry => {
    if (!isMachineId(v)) return { kind: 'invalid', raw: v };
    if (seen.has(v)) return { kind: 'duplicate', id: v };
    seen.add(v);
    return { kind: 'id', id: v };
  });
  if (seen.size === 0) throw E.idsNoneValid();
  return entries;
}

/** Steps 2 to 4: the window of one scheduling request (batch or dnotify); throws 422/400. */
export function parseWindow(body: unknown, nowMs: number): WindowSpec {
  const sdate = field(body, 'sdate');
  if (sdate === undefined || sdate === null) throw E.sdateMissing();
  if (typeof sdate !== 'number' || !Number.isFinite(sdate)) throw E.sdateNotNumeric();
  const startMs = Math.round(sdate * 1000);
  if (startMs <= nowMs) throw E.sdatePast();
  if (startMs > nowMs + MAX_AHEAD_MS) throw E.sdateTooFar();

  const duration = field(body, 'duration');
  let durationHours = MIN_DURATION_HOURS;
  if (duration !== undefined && duration !== null) {
    if (typeof duration !== 'number' || !Number.isFinite(duration) || duration <= 0)
      throw E.durationInvalid();
    if (duration > MAX_DURATION_HOURS) throw E.durationTooLong();
    durationHours = Math.max(MIN_DURATION_HOURS, duration);
  }

  const cat = field(body, 'maintenance_category');
  let category: MaintenanceCategory = 'other';
  if (cat !== undefined && cat !== null && cat !== CATEGORY_NOT_GIVEN) {
    if (typeof cat !== 'string' || !(CATEGORIES as readonly string[]).includes(cat))
      throw E.categoryInvalid();
    category = cat as MaintenanceCategory;
  }
  return { startMs, endMs: startMs + Math.round(durationHours * HOUR_MS), durationHours, category };
}

/** The whole batch request, in the documented order. */
export function parseBatchRequest(body: unknown, nowMs: number): { entries: IdEntry[]; window: WindowSpec } {
  const entries = parseMachineIds(field(body, 'machine_ids'));
  return { entries, window: parseWindow(body, nowMs) };
}

/** `?machine_ids=[1,2]` (the clients' form), also `1,2`; null when absent. Throws 400 on garbage. */
export function parseMachineIdsQuery(raw: unknown): number[] | null {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'string') throw E.machineIdsQuery();
  const s = raw.trim();
  let list: unknown;
  if (s.startsWith('[')) {
    try {
      list = JSON.parse(s);
    } catch {
      throw E.machineIdsQuery();
    }
  } else {
    list = s.split(',').map((x) => (/^\s*\d+\s*$/.test(x) ? Number(x) : x));
  }
  if (!Array.isArray(list) || list.length > 1000 || !list.every(isMachineId)) throw E.machineIdsQuery();
  return [...new Set(list)];
}
