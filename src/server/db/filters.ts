// Checked list filters (SelectFilter, made from a request by http/select-filters.ts) applied to a
// query: the repos take them as data and never import anything from http/.
import type { SelectQueryBuilder } from 'kysely';

/** One checked filter: a column, an operator and its value(s). */
export type SelectFilter =
  | { col: string; op: 'in' | 'not in'; vals: (string | number)[]; withNull: boolean }
  | { col: string; op: 'is' | 'is not' }
  | { col: string; op: '=' | '<>' | '>' | '>=' | '<' | '<='; val: string | number };

/** The query with every condition ANDed to its WHERE. */
export function whereFilters<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB,
  filters: SelectFilter[],
): QB {
  let q = qb as SelectQueryBuilder<any, any, any>;
  for (const f of filters) {
    const col = f.col;
    if ('vals' in f) {
      const { op, vals, withNull } = f;
      q = q.where((eb) => {
        const parts = [];
        if (vals.length > 0) parts.push(eb(col, op, vals));
        if (withNull) parts.push(eb(col, op === 'in' ? 'is' : 'is not', null));
        return op === 'in' ? eb.or(parts) : eb.and(parts);
      });
    } else if (!('val' in f)) {
      q = q.where(col, f.op, null);
    } else {
      q = q.where(col, f.op, f.val);
    }
  }
  return q as QB;
}
