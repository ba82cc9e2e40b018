// The host's payouts (GET /api/v0/payouts/): each period's gross, the platform's fee, the amount,
// where it was sent and its state, and where later payouts go (PUT /api/v0/payouts/destination/);
// above them what the host is owed now (`current` of GET /api/v0/users/me/machine-earnings). Loaded
// on demand, on the Hosting page.
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import type { Payout, PayoutDestination, PayoutMethod } from '../../../src/client/client';
import { ErrorNote, Field, Note, SelectField, usd, utc } from '../ui';
import { useAction, useRefresh } from '../components/actions';
import { FormFooter } from '../components/forms';
import { Table, TableCard } from '../components/Table';

const METHODS: { value: PayoutMethod; label: string }[] = [
  { value: 'paypal_manual', label: 'PayPal (e-mail)' },
  { value: 'wise_manual', label: 'Wise (e-mail)' },
  { value: 'internal', label: 'Internal account' },
  { value: 'none', label: 'None' },
];

const STATUS_BADGE: Record<Payout['status'], string> = {
  pending: 'badge badge-info',
  paid: 'badge badge-ok',
  failed: 'badge badge-bad',
};

export function destinationText(d: { method: string; destination: string } | null | undefined): string {
  if (!d || d.method === 'none') return 'none set';
  const m = METHODS.find((x) => x.value === d.method)?.label.replace(/ \(.*\)$/, '') ?? d.method;
  return `${m}: ${d.destination}`;
}

export default function Payouts() {
  const payouts = useQuery({ queryKey: ['payouts'], queryFn: () => client.myPayouts() });
  const rows = payouts.data?.payouts;
  const earnings = useQuery({ queryKey: ['payouts-owed'], queryFn: () => client.machineEarnings() });
  const owed = earnings.data?.current;
  return (
    <TableCard
      title="Payouts"
      id="payouts-h"
      meta={
        <span className="muted small" data-testid="payout-destination">
          Paid to {destinationText(payouts.data?.destination)}
        </span>
      }
    >
      <ErrorNote error={payouts.error ?? earnings.error} />
      {owed && (
        <dl className="card-pad stats owed">
          <div className="stat">
            <dt className="muted small">Owed to you now</dt>
            <dd data-testid="owed-balance">{usd(owed.balance, 2)}</dd>
          </div>
          <div className="stat">
            <dt className="muted small">Earned since the last payout</dt>
            <dd data-testid="owed-total">{usd(owed.total, 2)}</dd>
          </div>
          <div className="stat">
            <dt className="muted small">Platform fee on it, at today&apos;s rate</dt>
            <dd data-testid="owed-fee">{usd(owed.service_fee, 2)}</dd>
          </div>
        </dl>
      )}
      <Table
        label="Payouts"
        columns={[
          'Period (UTC)',
          'Status',
          { label: 'Gross', className: 'num' },
          { label: 'Fee', className: 'num' },
          { label: 'Amount', className: 'num' },
          'Destination',
          'Note',
        ]}
        rows={rows}
        empty={
          <>
            No payout yet: earnings are paid out each period once they reach the installation&apos;s minimum.
          </>
        }
        row={(p) => (
          <tr key={p.id} data-payout={p.id}>
            <td data-label="Period (UTC)">
              {utc(p.period_start).slice(0, 10)} – {utc(p.period_end).slice(0, 10)}
            </td>
            <td data-label="Status">
              <span className={STATUS_BADGE[p.status] ?? 'badge'}>{p.status}</span>
              {p.settled_at ? <span className="muted small"> {utc(p.settled_at)}</span> : null}
            </td>
            <td className="num" data-label="Gross">
              {usd(p.gross, 2)}
            </td>
            <td className="num" data-label="Fee">
              {usd(p.cut_amount, 2)} ({p.cut_percent} %)
            </td>
            <td className="num" data-label="Amount">
              <strong>{usd(p.amount, 2)}</strong>
            </td>
            <td data-label="Destination" className="break-anywhere">
              {destinationText(p)}
            </td>
            <td data-label="Note" className="break-anywhere">
              {p.note || '—'}
            </td>
          </tr>
        )}
      />
      <DestinationForm key={payouts.data ? 'ready' : 'wait'} current={payouts.data?.destination} />
    </TableCard>
  );
}

/** Where later payouts go; pending ones keep the destination they were made with. */
function DestinationForm({ current }: { current: PayoutDestination | null | undefined }) {
  const refresh = useRefresh();
  const [method, setMethod] = useState<PayoutMethod>(current?.method ?? 'paypal_manual');
  const [dest, setDest] = useState(current?.destination ?? '');
  const [saved, setSaved] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      setSaved(null);
      const r = await client.setPayoutDestination(method, dest.trim());
      setSaved(`Later payouts go to ${destinationText(r.destination)}.`);
      await refresh('payouts');
    });
  };
  const email = method === 'paypal_manual' || method === 'wise_manual';
  return (
    <form className="card-pad payout-form" onSubmit={submit} aria-label="Payout destination">
      <SelectField
        label="Pay me by"
        value={method}
        onChange={(e) => setMethod(e.target.value as PayoutMethod)}
      >
        {METHODS.map((m) => (
          <option key={m.value} value={m.value}>
            {m.label}
          </option>
        ))}
      </SelectField>
      {method !== 'none' && (
        <Field
          label={email ? 'E-mail' : 'Account'}
          type={email ? 'email' : 'text'}
          required
          maxLength={200}
          value={dest}
          onChange={(e) => setDest(e.target.value)}
          hint={`${email ? '' : 'An account of yours, such as a cost centre. '}Pending payouts keep the destination they were made with.`}
        />
      )}
      {saved && <Note kind="ok">{saved}</Note>}
      <FormFooter error={error} busy={busy} place="start">
        Save destination
      </FormFooter>
    </form>
  );
}
