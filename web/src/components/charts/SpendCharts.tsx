// Billing: what the renter spent per UTC day and per instance over the billing history's range,
// drawn from the same reply as the history table (GET /api/v0/users/me/invoices).
import type { Invoices } from '../../../../src/contract/api-types';
import { usd } from '../../ui';
import { BarList } from './BarList';
import { TimeChart } from './TimeChart';
import { DAY_S, spendOf } from './spend';

export function SpendCharts({ history, sdate, edate }: { history: Invoices; sdate: number; edate: number }) {
  const s = spendOf(history, sdate, edate);
  return (
    <div className="charts" aria-label="Spend charts">
      <TimeChart
        name="spend-per-day"
        title="Spend per day (UTC)"
        x={s.days}
        series={[{ label: 'Spend', values: s.perDay }]}
        bars
        utc
        barSpanS={DAY_S}
        format={(n) => usd(n, 2)}
        empty="No days in this range."
      />
      <BarList
        name="spend-per-instance"
        title="Spend per instance"
        rows={s.perInstance}
        format={(n) => usd(n, 4)}
        empty="No charges in this range."
      />
    </div>
  );
}
