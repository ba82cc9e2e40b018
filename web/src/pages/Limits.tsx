// Limits (docs/quotas.md): a team's limits and each member's (GPUs and $/hour running at once, a
// month budget), beside what runs now and this month's spend (GET /api/v0/quotas/); owners and
// managers set them (PUT /api/v0/quotas/). Below, the month budgets of the account's API keys
// (GET and PUT /api/v0/quotas/keys/).
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { ApiError, client } from '../api';
import { Button, ErrorNote, Field, Note, PageHead, SelectField, usd } from '../ui';
import { useAction, useRefresh } from '../components/actions';
import { Table, TableCard } from '../components/Table';

interface Scope {
  max_gpus?: number | null;
  max_dph?: number | null;
  month_budget?: number | null;
  running_gpus?: number;
  running_dph?: number;
  month_spend?: number;
}
interface Quotas {
  team_id?: number;
  team_name?: string;
  month?: string;
  can_manage?: boolean;
  team?: Scope;
  members?: (Scope & { user_id?: number; email?: string; role?: string })[];
}
interface KeyLimits {
  month?: string;
  keys?: { api_key_id?: number; name?: string; month_budget?: number | null; month_spend?: number }[];
}

const used = (n: number | undefined, limit: number | null | undefined, fmt: (v: number) => string) =>
  `${fmt(n ?? 0)} of ${limit === null || limit === undefined ? 'no limit' : fmt(limit)}`;

/** An input's text as a limit: empty clears it (null), else a number. */
const limitOf = (s: string): number | null => (s.trim() === '' ? null : Number(s));

export function Limits() {
  const refresh = useRefresh();
  const quotas = useQuery({
    queryKey: ['quotas'],
    queryFn: async () => {
      try {
        return await client.request<Quotas>('GET', '/api/v0/quotas/');
      } catch (e) {
        // Outside any team there are no team limits to show: only the key budgets.
        if (e instanceof ApiError && (e.status === 400 || e.status === 404)) return null;
        throw e;
      }
    },
  });
  const keys = useQuery({
    queryKey: ['quota-keys'],
    queryFn: () => client.request<KeyLimits>('GET', '/api/v0/quotas/keys/'),
  });
  const [who, setWho] = useState('team');
  const [gpus, setGpus] = useState('');
  const [dph, setDph] = useState('');
  const [budget, setBudget] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const [keyId, setKeyId] = useState('');
  const [keyBudget, setKeyBudget] = useState('');
  const keyAction = useAction();

  const q = quotas.data;
  const save = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    await run(async () => {
      const r = await client.request<Quotas & { msg?: string }>('PUT', '/api/v0/quotas/', {
        body: {
          team_id: q?.team_id,
          ...(who === 'team' ? {} : { user_id: Number(who) }),
          max_gpus: limitOf(gpus),
          max_dph: limitOf(dph),
          month_budget: limitOf(budget),
        },
      });
      setDone(r.msg ?? 'Limits set');
      await refresh('quotas');
    });
  };
  const saveKey = async (e: FormEvent) => {
    e.preventDefault();
    await keyAction.run(async () => {
      await client.request('PUT', `/api/v0/quotas/keys/${Number(keyId)}/`, {
        body: { month_budget: limitOf(keyBudget) },
      });
      await refresh('quota-keys');
    });
  };
  const rows = q ? [{ label: `Team ${q.team_name ?? q.team_id}`, s: q.team ?? {} }] : [];
  for (const m of q?.members ?? []) rows.push({ label: `${m.email} (${m.role})`, s: m });

  return (
    <>
      <PageHead title="Limits" />
      <ErrorNote error={quotas.error} />
      {q === null && <Note>You are in no team: team limits are set in a team (switch to it above).</Note>}
      {q && (
        <TableCard title={`Team limits, ${q.month} (UTC)`}>
          <Table
            label="Team and member limits"
            columns={['Who', 'GPUs running', '$/hour running', 'Spent this month']}
            rows={rows}
            row={(r) => (
              <tr key={r.label}>
                <td>{r.label}</td>
                <td>{used(r.s.running_gpus, r.s.max_gpus, String)}</td>
                <td>{used(r.s.running_dph, r.s.max_dph, (v) => usd(v, 2))}</td>
                <td>{used(r.s.month_spend, r.s.month_budget, (v) => usd(v, 2))}</td>
              </tr>
            )}
          />
        </TableCard>
      )}
      {q?.can_manage && (
        <section className="card" aria-labelledby="setlimits-h">
          <h2 id="setlimits-h">Set limits</h2>
          <p className="muted small">
            A create that would pass a limit is refused. A spent month budget stops (never destroys) the
            instances it pays for, after an e-mail at 80 % and at 100 %. Leave a field empty for no limit.
          </p>
          <form onSubmit={save} className="stack">
            <SelectField label="For" value={who} onChange={(e) => setWho(e.target.value)}>
              <option value="team">the whole team</option>
              {(q.members ?? []).map((m) => (
                <option key={m.user_id} value={String(m.user_id)}>
                  {m.email}
                </option>
              ))}
            </SelectField>
            <Field
              label="Most GPUs running at once"
              type="number"
              min={0}
              step={1}
              value={gpus}
              onChange={(e) => setGpus(e.target.value)}
            />
            <Field
              label="Most $/hour running at once"
              type="number"
              min={0}
              step="any"
              value={dph}
              onChange={(e) => setDph(e.target.value)}
            />
            <Field
              label="Month budget (USD)"
              type="number"
              min={0}
              step="any"
              value={budget}
              onChange={(e) => setBudget(e.target.value)}
            />
            <ErrorNote error={error} />
            {done && <Note kind="ok">{done}</Note>}
            <Button type="submit" variant="primary" busy={busy}>
              Save limits
            </Button>
          </form>
        </section>
      )}
      <TableCard title={`API key budgets, ${keys.data?.month ?? ''} (UTC)`}>
        <ErrorNote error={keys.error} />
        <Table
          label="API key budgets"
          columns={['Key', 'Name', 'Spent this month', 'Month budget']}
          rows={keys.data?.keys}
          row={(k) => (
            <tr key={k.api_key_id}>
              <td>{k.api_key_id}</td>
              <td>{k.name || '—'}</td>
              <td>{usd(k.month_spend ?? 0, 2)}</td>
              <td>
                {k.month_budget === null || k.month_budget === undefined ? 'none' : usd(k.month_budget, 2)}
              </td>
            </tr>
          )}
        />
        <form onSubmit={saveKey} className="stack">
          <SelectField label="Key" value={keyId} onChange={(e) => setKeyId(e.target.value)} required>
            <option value="">choose a key</option>
            {(keys.data?.keys ?? []).map((k) => (
              <option key={k.api_key_id} value={String(k.api_key_id)}>
                {k.api_key_id} {k.name}
              </option>
            ))}
          </SelectField>
          <Field
            label="Month budget (USD; empty: none)"
            type="number"
            min={0}
            step="any"
            value={keyBudget}
            onChange={(e) => setKeyBudget(e.target.value)}
          />
          <ErrorNote error={keyAction.error} />
          <Button type="submit" busy={keyAction.busy}>
            Save key budget
          </Button>
        </form>
      </TableCard>
    </>
  );
}
