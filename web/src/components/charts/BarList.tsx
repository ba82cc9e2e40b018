// Amounts per thing (an instance, a machine) as horizontal bars, largest first: plain HTML, so it
// needs no chart library, wraps on a phone and reads as a list. `data-plotted` holds [key, value]
// of each bar in the order shown.
import './charts.css';

export interface BarRow {
  key: number | string;
  label: string;
  value: number;
}

export function BarList(p: {
  name: string;
  title: string;
  rows: BarRow[];
  format: (n: number) => string;
  empty?: string;
}) {
  const rows = [...p.rows].sort((a, b) => b.value - a.value || String(a.key).localeCompare(String(b.key)));
  const top = Math.max(0, ...rows.map((r) => r.value));
  return (
    <figure
      className="chart bar-list"
      data-chart={p.name}
      data-state={rows.length ? 'drawn' : 'empty'}
      data-plotted={JSON.stringify(rows.map((r) => [r.key, r.value]))}
    >
      <figcaption>{p.title}</figcaption>
      {rows.length === 0 ? (
        <p className="muted small">{p.empty ?? 'Nothing to show yet.'}</p>
      ) : (
        <ul aria-label={p.title}>
          {rows.map((r) => (
            <li key={r.key} data-key={r.key}>
              <span className="bar-label">{r.label}</span>
              <span className="bar-track" aria-hidden="true">
                <span className="bar-fill" style={{ width: `${top > 0 ? (r.value / top) * 100 : 0}%` }} />
              </span>
              <span className="bar-value num">{p.format(r.value)}</span>
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}
