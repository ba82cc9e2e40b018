// Hosting: what renters paid for the host's machines over the last 30 UTC days, per day and per
// machine (GET /api/v0/users/me/machine-earnings, the billing module's earnings).
import { useQuery } from '@tanstack/react-query';
import { client } from '../../api';
import { ErrorNote, usd } from '../../ui';
import { BarList } from './BarList';
import { TimeChart } from './TimeChart';
import { DAY_S } from './spend';

/** Days shown: the last 30 UTC days, today included. */
export const EARNINGS_DAYS = 30;

export function EarningsCharts() {
  const today = Math.floor(Date.now() / 1000 / DAY_S);
  const from = today - (EARNINGS_DAYS - 1);
  const q = useQuery({
    queryKey: ['machine-earnings-chart', from, today],
    queryFn: () => client.machineEarnings({ from, to: today }),
    refetchInterval: 60_000,
  });
  const e = q.data;
  return (
    <section className="card" aria-labelledby="earnings-charts-h">
      <h2 id="earnings-charts-h">Earnings, last {EARNINGS_DAYS} days</h2>
      <ErrorNote error={q.error} />
      {e ? (
        <div className="charts">
          <TimeChart
            name="earnings-per-day"
            title="Earnings per day (UTC)"
            x={e.per_day.map((d) => d.day * DAY_S)}
            series={[{ label: 'Earnings', values: e.per_day.map((d) => d.earn), color: '--ok' }]}
            bars
            utc
            barSpanS={DAY_S}
            format={(n) => usd(n, 2)}
          />
          <BarList
            name="earnings-per-machine"
            title="Earnings per machine"
            rows={e.per_machine.map((m) => ({
              key: m.machine_id,
              label: `Machine #${m.machine_id}`,
              value: m.earn,
            }))}
            format={(n) => usd(n, 4)}
            empty="No machines yet."
          />
        </div>
      ) : (
        !q.error && <p className="muted small">Loading…</p>
      )}
    </section>
  );
}
