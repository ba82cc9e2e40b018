// A host's earnings for the current period (this UTC month through today, as `openrig show
// earnings` reports by default): one table per UTC day and one per machine, in USD, with the
// period's total. Kept apart from the charts (charts/EarningsCharts.tsx), which draw the same data.
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import { ErrorNote, usd } from '../ui';
import { Table, TableCard } from './Table';

const DAY_S = 86_400;

/** The first UTC day of this month and today, as days since 1970-01-01. */
export function currentPeriod(nowMs: number): { from: number; to: number } {
  const d = new Date(nowMs);
  return {
    from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000 / DAY_S,
    to: Math.floor(nowMs / 1000 / DAY_S),
  };
}

export function EarningsTable() {
  const { from, to } = currentPeriod(Date.now());
  const q = useQuery({
    queryKey: ['machine-earnings-table', from, to],
    queryFn: () => client.machineEarnings({ from, to }),
    refetchInterval: 60_000,
  });
  const e = q.data;
  // Newest day first: today's earnings are the first row.
  const days = [...(e?.per_day ?? [])].reverse();
  return (
    <TableCard
      title="Earnings this month"
      id="earnings-table-h"
      meta={
        e && (
          <span className="muted small">
            Total {usd(e.summary.total_earn, 2)} (compute {usd(e.summary.total_gpu, 2)}, disk{' '}
            {usd(e.summary.total_stor, 2)})
          </span>
        )
      }
    >
      <ErrorNote error={q.error} />
      {q.isPending ? (
        <div className="skeleton" aria-busy="true" />
      ) : (
        <>
          <Table
            label="Earnings per day"
            columns={[
              'Day (UTC)',
              { label: 'Compute', className: 'num' },
              { label: 'Disk', className: 'num' },
              { label: 'Total', className: 'num' },
            ]}
            rows={days}
            empty="No days yet."
            row={(d) => (
              <tr key={d.day}>
                <td data-label="Day (UTC)">{d.date}</td>
                <td className="num" data-label="Compute">
                  {usd(d.gpu_earn, 2)}
                </td>
                <td className="num" data-label="Disk">
                  {usd(d.sto_earn, 2)}
                </td>
                <td className="num" data-label="Total">
                  {usd(d.earn, 2)}
                </td>
              </tr>
            )}
          />
          <Table
            label="Earnings per machine"
            columns={[
              'Machine',
              { label: 'Compute', className: 'num' },
              { label: 'Disk', className: 'num' },
              { label: 'Total', className: 'num' },
            ]}
            rows={e?.per_machine ?? []}
            empty="No machines."
            row={(m) => (
              <tr key={m.machine_id}>
                <td data-label="Machine">#{m.machine_id}</td>
                <td className="num" data-label="Compute">
                  {usd(m.gpu_earn, 2)}
                </td>
                <td className="num" data-label="Disk">
                  {usd(m.sto_earn, 2)}
                </td>
                <td className="num" data-label="Total">
                  {usd(m.earn, 2)}
                </td>
              </tr>
            )}
          />
        </>
      )}
    </TableCard>
  );
}
