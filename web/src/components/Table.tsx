// Tables as the pages show them: a card with a heading, and a table that scrolls sideways on a
// narrow screen, is named for screen readers, and gives a last column of buttons a hidden name.
import type { ReactNode, ThHTMLAttributes } from 'react';
import { Empty } from '../ui';

/** A header cell: its text, or its content with the cell's attributes. */
export type Column = string | (ThHTMLAttributes<HTMLTableCellElement> & { label: ReactNode });

export function Table<T>({
  label,
  columns,
  actions,
  rows,
  row,
  empty,
  children,
}: {
  label: string;
  columns: Column[];
  /** The hidden header of a last column of buttons. */
  actions?: string;
  /** Nothing is shown until there are rows to show (null or undefined while loading). */
  rows: readonly T[] | null | undefined;
  row: (r: T, i: number) => ReactNode;
  /** Shown instead of a table without rows; when not given, the table is shown with none. */
  empty?: ReactNode;
  /** Rows after those of `rows`. */
  children?: ReactNode;
}) {
  if (!rows) return null;
  if (rows.length === 0 && empty !== undefined) return <Empty>{empty}</Empty>;
  return (
    <div className="table-scroll">
      <table className="table" aria-label={label}>
        <thead>
          <tr>
            {columns.map((c, i) => {
              if (typeof c === 'string') return <th key={i}>{c}</th>;
              const { label: content, ...attrs } = c;
              return (
                <th key={i} {...attrs}>
                  {content}
                </th>
              );
            })}
            {actions && (
              <th>
                <span className="sr-only">{actions}</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map(row)}
          {children}
        </tbody>
      </table>
    </div>
  );
}

/** A card holding a table: its heading (named by `id` for the section's label), more beside it. */
export function TableCard({
  title,
  id,
  meta,
  children,
}: {
  title: string;
  id?: string;
  meta?: ReactNode;
  children: ReactNode;
}) {
  return (
    <section className="card table-card" aria-labelledby={id}>
      <div className="table-meta">
        <h2 id={id}>{title}</h2>
        {meta}
      </div>
      {children}
    </section>
  );
}
