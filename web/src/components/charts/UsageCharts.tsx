// Instances: an instance's GPU utilisation, GPU memory and disk use over its life, as its host's
// agent measured them (GET /api/v0/instances/{id}/usage-history/: a point a minute for the last
// day, an hour before that). Fetched only once opened, so a long list asks for nothing.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../../api';
import { ErrorNote } from '../../ui';
import { TimeChart } from './TimeChart';

const GB = 1e9;
/** Samples further apart than three hours are not joined: the instance was not measured between. */
const MAX_GAP_S = 3 * 3600;
const gbText = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)} GB`;

export function UsageCharts({ instanceId }: { instanceId: number }) {
  const [open, setOpen] = useState(false);
  return (
    <details
      className="usage-charts"
      data-usage-charts={instanceId}
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary>Usage over time</summary>
      {open && <UsageChartsBody instanceId={instanceId} />}
    </details>
  );
}

function UsageChartsBody({ instanceId }: { instanceId: number }) {
  const q = useQuery({
    queryKey: ['usage-history', instanceId],
    queryFn: () => client.usageHistory(instanceId),
    refetchInterval: 60_000,
  });
  const s = q.data?.samples;
  if (!s) return q.error ? <ErrorNote error={q.error} /> : <p className="muted small">Loading…</p>;
  const x = s.map((p) => p.t);
  const gbs = (v: number | null) => (v === null ? null : v / GB);
  const none = 'Not measured yet: its host reports it once the instance runs.';
  const chart = (
    name: string,
    title: string,
    values: (number | null)[],
    format: (n: number) => string,
    color: string,
    empty: string,
  ) => (
    <TimeChart
      name={name}
      title={title}
      x={values.some((v) => v !== null) ? x : []}
      series={[{ label: title, values, color }]}
      format={format}
      maxGapS={MAX_GAP_S}
      empty={empty}
    />
  );
  return (
    <div className="charts">
      {chart(
        'gpu-util',
        'GPU utilisation',
        s.map((p) => p.gpu_util),
        (n) => `${Math.round(n)} %`,
        '--accent',
        none,
      )}
      {chart(
        'gpu-mem',
        'GPU memory',
        s.map((p) => gbs(p.gpu_mem_bytes)),
        gbText,
        '--info',
        "Not reported by this host's agent.",
      )}
      {chart(
        'disk',
        'Disk use',
        s.map((p) => gbs(p.disk_usage_bytes)),
        gbText,
        '--warn',
        none,
      )}
    </div>
  );
}
