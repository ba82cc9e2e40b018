// A chart over time (uPlot, loaded on first use): lines, or bars for daily sums. The figure
// carries the data the chart was given once it has drawn it (`data-plotted`: uPlot's own data
// arrays, x in unix seconds), so a test can compare the points drawn with the API's numbers.
// The chart takes its box's width and follows it (a phone's 390 px included).
import { useEffect, useRef, useState } from 'react';
import type uPlotType from 'uplot';
import './charts.css';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  /** A CSS custom property of the page (e.g. --accent) or a colour. */
  color?: string;
}

/** uPlot's gaps (canvas pixels, in order) plus one between each two points more than `maxS` apart. */
const gapsOver =
  (maxS: number): uPlotType.Series.GapsRefiner =>
  (u, _series, idx0, idx1, found) => {
    const xs = u.data[0];
    const out: [number, number][] = [...(found ?? [])];
    for (let i = idx0; i < idx1; i++)
      if (xs[i + 1]! - xs[i]! > maxS)
        out.push([Math.round(u.valToPos(xs[i]!, 'x', true)), Math.round(u.valToPos(xs[i + 1]!, 'x', true))]);
    return out.sort((a, b) => a[0] - b[0]);
  };

const cssColor = (c: string) =>
  c.startsWith('--') ? getComputedStyle(document.documentElement).getPropertyValue(c).trim() || '#888' : c;

export function TimeChart(p: {
  /** data-chart: names the chart for tests and styles. */
  name: string;
  title: string;
  /** unix seconds */
  x: number[];
  series: ChartSeries[];
  /** Bars (one per x, e.g. a day) instead of lines. */
  bars?: boolean;
  /** The x axis in UTC (days of the billing) rather than the browser's time zone. */
  utc?: boolean;
  /** Seconds a bar spans (bars only): the x axis is padded by half of it each side. */
  barSpanS?: number;
  /** Lines: two points further apart than this (seconds) are not joined (no measurement between). */
  maxGapS?: number;
  /** The y axis's values as text. */
  format: (n: number) => string;
  height?: number;
  empty?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<'loading' | 'drawn' | 'failed'>('loading');
  const [plotted, setPlotted] = useState<string | undefined>(undefined);
  const height = p.height ?? 180;
  const key = JSON.stringify([
    p.x,
    p.series.map((s) => [s.label, s.values, s.color]),
    p.bars,
    p.barSpanS,
    p.maxGapS,
  ]);
  const empty = p.x.length === 0;

  useEffect(() => {
    if (empty) return;
    let chart: uPlotType | null = null;
    let ro: ResizeObserver | null = null;
    let gone = false;
    setState('loading');
    import('./uplot-draw')
      .then(({ uPlot }) => {
        const el = box.current;
        if (gone || !el) return;
        const muted = cssColor('--muted');
        const line = cssColor('--line');
        const axis = {
          stroke: muted,
          grid: { stroke: line, width: 1 },
          ticks: { stroke: line, width: 1 },
        };
        const half = (p.barSpanS ?? 0) / 2;
        const opts: uPlotType.Options = {
          width: Math.max(200, el.clientWidth),
          height,
          legend: { show: p.series.length > 1 },
          ...(p.utc ? { tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC') } : {}),
          cursor: { drag: { x: false, y: false } },
          scales: {
            x: {
              time: true,
              ...(p.bars ? { range: (_u, min, max) => [min - half, max + half] as [number, number] } : {}),
            },
            y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] },
          },
          axes: [axis, { ...axis, size: 64, values: (_u, ticks) => ticks.map((t) => p.format(t)) }],
          series: [
            {},
            ...p.series.map((s) => {
              const c = cssColor(s.color ?? '--accent');
              return {
                label: s.label,
                stroke: c,
                width: p.bars ? 0 : 2,
                fill: p.bars ? c : undefined,
                spanGaps: false,
                points: { show: !p.bars && p.x.length < 3 },
                value: (_u: uPlotType, v: number | null) => (v === null ? '—' : p.format(v)),
                ...(p.bars ? { paths: uPlot.paths.bars!({ size: [0.7, 40] }) } : {}),
                ...(p.maxGapS ? { gaps: gapsOver(p.maxGapS) } : {}),
              };
            }),
          ],
        };
        chart = new uPlot(opts, [p.x, ...p.series.map((s) => s.values)] as uPlotType.AlignedData, el);
        // What the chart holds, as it holds it: x, then each series.
        setPlotted(JSON.stringify(chart.data));
        setState('drawn');
        ro = new ResizeObserver(() => {
          if (chart && el.clientWidth > 0) chart.setSize({ width: el.clientWidth, height });
        });
        ro.observe(el);
      })
      .catch(() => {
        if (!gone) setState('failed');
      });
    return () => {
      gone = true;
      ro?.disconnect();
      chart?.destroy();
    };
    // `key` stands for the data and options: a new array of the same numbers draws nothing anew.
  }, [key, height, empty]);

  return (
    <figure
      className="chart"
      data-chart={p.name}
      data-state={empty ? 'empty' : state}
      data-plotted={empty ? '[]' : plotted}
    >
      <figcaption>{p.title}</figcaption>
      {empty ? (
        <p className="muted small">{p.empty ?? 'Nothing to show yet.'}</p>
      ) : (
        <>
          <div className="chart-box" ref={box} role="img" aria-label={p.title} />
          {state === 'failed' && <p className="muted small">The chart could not be loaded.</p>}
        </>
      )}
    </figure>
  );
}
