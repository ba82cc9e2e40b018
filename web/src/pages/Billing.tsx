// Billing: the balance and what is spent now (GET /api/v0/billing/), the billing history of a range
// of UTC days (GET /api/v0/users/me/invoices: the credits added, the charges per instance, UTC day
// and kind and per volume and UTC day, the range's totals and today's charges), and the latest ledger rows
// (GET /api/v0/billing/charges/), where a charge is a positive amount and a credit a negative one.
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import type { LedgerRow } from '../../../src/client/client';
import { Button, ErrorNote, Field, usd, utc } from '../ui';
import { Table, TableCard } from '../components/Table';
import { SpendCharts } from '../components/charts/SpendCharts';
import { CreditHelp } from '../components/CreditHelp';

const DAY_S = 86_400;

/** "2026-11-27": a UTC day as a date field holds it. */
const dayText = (epochS: number) => new Date(epochS * 1000).toISOString().slice(0, 10);
const dayStart = (day: string) => Date.parse(`${day}T00:00:00Z`) / 1000;

/** A charge to the micro-dollar's tenth of a cent, a credit to the cent. */
const charge = (n: number) => usd(n, 4);

const HOUR_S = 3600;

/**
 * One line of the ledger as shown: a credit, or the charges of one instance and kind (or of one
 * volume) in one UTC hour.
 */
export interface LedgerLine {
  key: string;
  kind: string;
  instance_id: number | null;
  volume_id: number | null;
  /** The UTC hour the charges' periods ended in (epoch s), or the credit's time. */
  at: number;
  amount: number;
  /** How many ledger rows (meter periods) it sums. */
  rows: number;
}

/**
 * The ledger's rows (newest first) as lines: the meter writes a row per instance and kind every
 * few seconds, so charges are summed per instance, kind and UTC hour (the hour the period ended
 * in, as the history above counts a charge on the UTC day it ended); each credit stays a line.
 */
export function ledgerLines(rows: readonly LedgerRow[]): LedgerLine[] {
  const out: LedgerLine[] = [];
  const byKey = new Map<string, LedgerLine>();
  for (const r of rows) {
    if (r.amount < 0 || r.kind === 'credit') {
      out.push({
        key: `c${r.id}`,
        kind: r.kind,
        instance_id: r.instance_id,
        volume_id: r.volume_id ?? null,
        at: r.period_end,
        amount: r.amount,
        rows: 1,
      });
      continue;
    }
    const hour = Math.floor(r.period_end / HOUR_S) * HOUR_S;
    const key = `${r.instance_id ?? '-'}:${r.volume_id ?? '-'}:${r.kind}:${hour}`;
    const line = byKey.get(key);
    if (line) {
      line.amount += r.amount;
      line.rows += 1;
      continue;
    }
    const fresh = {
      key,
      kind: r.kind,
      instance_id: r.instance_id,
      volume_id: r.volume_id ?? null,
      at: hour,
      amount: r.amount,
      rows: 1,
    };
    byKey.set(key, fresh);
    out.push(fresh);
  }
  return out;
}

/** "2026-11-27 12:00–13:00 UTC": an hour in UTC. */
function utcHour(epochS: number): string {
  const start = utc(epochS).slice(0, 16);
  const end = new Date((epochS + HOUR_S) * 1000).toISOString().slice(11, 16);
  return `${start}–${end} UTC`;
}

export function Billing() {
  const bal = useQuery({
    queryKey: ['billing'],
    queryFn: () => client.billingSummary(),
    refetchInterval: 15_000,
  });
  // The signed-in user (the shell's query): its credit_help is the operator's text on getting credit.
  const me = useQuery({ queryKey: ['me'], queryFn: () => client.currentUser(), staleTime: 30_000 });
  const perHour = (bal.data?.instances ?? []).reduce((s, i) => s + i.compute_dph + i.disk_dph, 0);
  return (
    <>
      <ErrorNote error={bal.error} />
      <CreditHelp balance={bal.data?.balance} help={me.data?.credit_help} />
      <div className="stats">
        <div className="card stat">
          <span className="muted small">Balance</span>
          <strong data-testid="balance">{bal.data ? usd(bal.data.balance, 2) : '…'}</strong>
        </div>
        <div className="card stat">
          <span className="muted small">Spending now</span>
          <strong>{bal.data ? `${usd(perHour)}/h` : '…'}</strong>
        </div>
        <div className="card stat">
          <span className="muted small">Live instances</span>
          <strong>{bal.data ? bal.data.instances.length : '…'}</strong>
        </div>
      </div>
      <BillingHistory />
      <Ledger />
    </>
  );
}

function BillingHistory() {
  // The last 30 UTC days, today included; the range runs to the end of the last day.
  const today = Math.floor(Date.now() / 1000 / DAY_S) * DAY_S;
  const [from, setFrom] = useState(dayText(today - 29 * DAY_S));
  const [to, setTo] = useState(dayText(today));
  const [range, setRange] = useState({ from, to });
  const sdate = dayStart(range.from);
  const edate = dayStart(range.to) + DAY_S;
  const history = useQuery({
    queryKey: ['invoices', sdate, edate],
    queryFn: () => client.invoices({ sdate, edate }),
    enabled: Number.isFinite(sdate) && Number.isFinite(edate),
  });
  const show = (e: FormEvent) => {
    e.preventDefault();
    setRange({ from, to });
  };
  const h = history.data;
  // Newest first, as the other tables are; the server answers oldest first.
  const items = h ? [...h.invoices].reverse() : undefined;
  return (
    <TableCard title="Billing history" id="history-h">
      <form className="range-form" onSubmit={show} aria-label="Billing history range">
        <Field
          label="From (UTC day)"
          type="date"
          required
          value={from}
          onChange={(e) => setFrom(e.target.value)}
        />
        <Field label="To (UTC day)" type="date" required value={to} onChange={(e) => setTo(e.target.value)} />
        <div className="filter-actions">
          <Button type="submit" busy={history.isFetching}>
            Show
          </Button>
        </div>
      </form>
      <ErrorNote error={history.error} />
      {h && (
        <dl className="facts totals" aria-label="Billing history totals">
          <div>
            <dt>Credits in range</dt>
            <dd data-testid="total-credits">{usd(h.totals.credits, 2)}</dd>
          </div>
          <div>
            <dt>Charges in range</dt>
            <dd data-testid="total-charges">{charge(h.totals.charges)}</dd>
          </div>
          <div>
            <dt>Today&apos;s charges (UTC)</dt>
            <dd data-testid="today-charges">{charge(h.current.charges)}</dd>
          </div>
        </dl>
      )}
      {h && <SpendCharts history={h} sdate={sdate} edate={edate} />}
      <Table
        label="Billing history"
        columns={[
          'Date (UTC)',
          'Item',
          'Kind',
          { label: 'Quantity', className: 'num' },
          { label: 'Charge', className: 'num' },
          { label: 'Credit', className: 'num' },
        ]}
        rows={items}
        empty="Nothing in this range."
        row={(it, k) => (
          <tr key={k} data-item={it.type}>
            <td data-label="Date (UTC)" className="mono small">
              {it.type === 'charge' ? dayText(it.timestamp) : utc(it.timestamp)}
            </td>
            <td data-label="Item">{it.description}</td>
            <td data-label="Kind">{it.type === 'charge' ? it.kind : 'credit'}</td>
            <td data-label="Quantity" className="num">
              {it.type === 'charge' ? `${(it.quantity ?? 0).toFixed(4)} h × ${usd(it.rate ?? 0)}/h` : ''}
            </td>
            <td data-label="Charge" className="num">
              {it.type === 'charge' ? charge(it.amount) : ''}
            </td>
            <td data-label="Credit" className="num">
              {it.type === 'payment' ? usd(it.amount, 2) : ''}
            </td>
          </tr>
        )}
      />
    </TableCard>
  );
}

/** The latest ledger rows: a credit is a negative amount there, shown as money in. */
function Ledger() {
  const rows = useQuery({
    queryKey: ['charges'],
    queryFn: () => client.ledger(100),
  });
  const lines = rows.data ? ledgerLines(rows.data.charges) : undefined;
  return (
    <TableCard title="Ledger" id="ledger-h">
      <p className="muted small">
        The latest 100 ledger rows: the meter charges every few seconds, so each instance&apos;s (and each
        volume&apos;s) charges are summed per kind and UTC hour.
      </p>
      <ErrorNote error={rows.error} />
      <Table
        label="Ledger"
        columns={[
          'When (UTC)',
          'Instance',
          'Kind',
          { label: 'Charge', className: 'num' },
          { label: 'Credit', className: 'num' },
        ]}
        rows={lines}
        empty="No charges or credits yet."
        row={(c) => (
          <tr key={c.key} data-kind={c.kind} data-rows={c.rows}>
            <td data-label="When (UTC)" className="mono small">
              {c.amount < 0 || c.kind === 'credit' ? utc(c.at) : utcHour(c.at)}
            </td>
            <td data-label="Instance">
              {c.instance_id ? `#${c.instance_id}` : c.volume_id ? `Volume #${c.volume_id}` : '—'}
            </td>
            <td data-label="Kind">{c.kind === 'credit' ? 'credit added' : c.kind}</td>
            <td className="num" data-label="Charge">
              {c.amount >= 0 ? charge(c.amount) : ''}
            </td>
            <td className="num" data-label="Credit">
              {c.amount < 0 ? usd(-c.amount, 2) : ''}
            </td>
          </tr>
        )}
      />
    </TableCard>
  );
}
