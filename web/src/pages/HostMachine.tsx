// A host's machine in detail (/hosting/machines/ID), loaded on demand: its verification state and
// history with the reasons (GET /machines/ID/verification), its latest benchmark run with when and
// by which agent version it was measured, its reliability with the formula's parts (GET
// /machines/ID/reliability/), and renters' reports about it (GET /machines/ID/reports/).
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import type {
  BenchmarkRow,
  MachineReliability,
  MachineVerification,
  VerificationState,
} from '../../../src/client/client';
import { ErrorNote, Link, PageHead, utc } from '../ui';
import { Table, TableCard } from '../components/Table';
import { fixed, problemText } from '../components/trust';

export default function HostMachine({ id }: { id: number }) {
  const verification = useQuery({
    queryKey: ['machine-verification', id],
    queryFn: () => client.machineVerification(id),
  });
  const reliability = useQuery({
    queryKey: ['machine-reliability', id],
    queryFn: () => client.machineReliability(id),
  });
  const reports = useQuery({ queryKey: ['machine-reports', id], queryFn: () => client.machineReports(id) });
  return (
    <>
      <PageHead title={`Machine #${id}`}>
        <Link to="/hosting" className="btn btn-ghost">
          All machines
        </Link>
      </PageHead>
      <Verification v={verification.data} error={verification.error} />
      <Reliability r={reliability.data} error={reliability.error} />
      <Benchmarks rows={verification.data?.benchmarks} error={verification.error} />
      <TableCard title="Reports from renters" id="reports-h">
        <ErrorNote error={reports.error} />
        <Table
          label="Reports"
          columns={['When', 'Problem', 'Message']}
          rows={reports.data}
          empty="No renter has reported a problem with this machine."
          row={(r) => (
            <tr key={r.id} data-report={r.id}>
              <td data-label="When">{utc(r.created_at)}</td>
              <td data-label="Problem">
                <span className="badge badge-warn">{problemText(r.problem)}</span>
              </td>
              <td data-label="Message" className="break-anywhere">
                {r.message || '—'}
              </td>
            </tr>
          )}
        />
      </TableCard>
    </>
  );
}

const STATE_BADGE: Record<VerificationState, string> = {
  verified: 'badge badge-ok',
  unverified: 'badge',
  deverified: 'badge badge-bad',
};

function Verification({ v, error }: { v: MachineVerification | undefined; error: unknown }) {
  return (
    <TableCard
      title="Verification"
      id="verification-h"
      meta={
        v && (
          <span className={STATE_BADGE[v.verification] ?? 'badge'} data-testid="verification-state">
            {v.verification}
          </span>
        )
      }
    >
      <ErrorNote error={error} />
      {v && v.verification !== 'verified' && (
        <p className="muted small card-pad">
          Renters&apos; default searches leave it out until it is verified. To be verified:{' '}
          {v.verification_rule ?? 'ask the operator of this installation'}.
        </p>
      )}
      <Table
        label="Verification history"
        columns={['When', 'Change', 'By', 'Reason']}
        rows={v?.history}
        empty={<>No change yet: the machine is as it registered.</>}
        row={(e) => (
          <tr key={e.id} data-event={e.id}>
            <td data-label="When">{utc(e.at)}</td>
            <td data-label="Change">
              {e.from} → {e.to}
            </td>
            <td data-label="By">{e.by === 'rule' ? 'the rules' : 'an operator'}</td>
            <td data-label="Reason" className="break-anywhere">
              {e.reason}
            </td>
          </tr>
        )}
      />
    </TableCard>
  );
}

/** The formula's parts: each factor beside the record it is computed from. */
function Reliability({ r, error }: { r: MachineReliability | undefined; error: unknown }) {
  if (error) return <ErrorNote error={error} />;
  if (!r) return <div className="skeleton" aria-busy="true" />;
  const parts: { key: keyof MachineReliability['factors']; label: string; record: string }[] = [
    {
      key: 'uptime',
      label: 'Uptime U',
      record: `${fixed(r.online_hours, 1)} h online of ${fixed(r.listed_hours, 1)} h listed`,
    },
    {
      key: 'starts',
      label: 'Starts S',
      record: `${r.start_failures} failed of ${r.starts} start${r.starts === 1 ? '' : 's'}`,
    },
    {
      key: 'endings',
      label: 'Endings C',
      record: `${r.interrupted} interrupted of ${r.ended} ended`,
    },
    {
      key: 'reports',
      label: 'Reports P',
      record: `${r.reporters} renter${r.reporters === 1 ? '' : 's'} reported a problem`,
    },
  ];
  return (
    <section className="card" aria-labelledby="reliability-h">
      <div className="section-head">
        <h2 id="reliability-h">Reliability</h2>
        <strong className="big-num" data-testid="reliability-value">
          {fixed(r.reliability, 4)}
        </strong>
      </div>
      <p className="muted small">
        {r.judged
          ? `Earned over the last ${r.window_days} days; computed ${utc(r.computed_at)}.`
          : 'Not judged: no agent has run this machine, so it keeps the reliability the operator gave it.'}{' '}
        Offers show it, and renters filter and order on it.
      </p>
      <dl className="facts trust-facts">
        {parts.map((p) => (
          <div key={p.key} data-factor={p.key}>
            <dt>{p.label}</dt>
            <dd data-testid={`factor-${p.key}`}>{fixed(r.factors[p.key], 4)}</dd>
            <dd className="muted small">{p.record}</dd>
          </div>
        ))}
      </dl>
      <p className="small mono break-anywhere" data-testid="reliability-formula">
        reliability = U × S × C × P = {fixed(r.factors.uptime, 4)} × {fixed(r.factors.starts, 4)} ×{' '}
        {fixed(r.factors.endings, 4)} × {fixed(r.factors.reports, 4)}
      </p>
      <p className="muted small">{r.formula}</p>
    </section>
  );
}

/** The latest run: the rows measured at the newest time, with the agent that measured them. */
function Benchmarks({ rows, error }: { rows: BenchmarkRow[] | undefined; error: unknown }) {
  const newest = rows?.length ? Math.max(...rows.map((b) => b.last_update)) : null;
  const latest = rows?.filter((b) => b.last_update === newest);
  const agent = latest?.[0]?.image;
  return (
    <TableCard
      title="Latest benchmarks"
      id="benchmarks-h"
      meta={
        newest ? (
          <span className="muted small" data-testid="benchmarks-when">
            {utc(newest)} · {agent}
          </span>
        ) : undefined
      }
    >
      <ErrorNote error={error} />
      <Table
        label="Benchmarks"
        columns={[
          'Figure',
          'Hardware',
          { label: 'Score', className: 'num' },
          { label: 'GPUs', className: 'num' },
        ]}
        rows={latest}
        empty={
          <>No benchmark yet: the agent runs them after it registers and every day (docs/benchmarks.md).</>
        }
        row={(b) => (
          <tr key={b.id} data-figure={b.name}>
            <td data-label="Figure">{b.name}</td>
            <td data-label="Hardware">{b.model || '—'}</td>
            <td className="num" data-label="Score" data-testid="score">
              {b.score} {b.unit}
            </td>
            <td className="num" data-label="GPUs">
              {b.num_gpus}
            </td>
          </tr>
        )}
      />
    </TableCard>
  );
}
