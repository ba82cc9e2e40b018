// Account: API keys (create with scopes, shown once, revoke, last used), SSH keys, billing, and
// the Security tab (pages/Security.tsx).
import { useState, type FormEvent } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api';
import {
  Button,
  CopyButton,
  Dialog,
  Empty,
  ErrorNote,
  Field,
  Link,
  Note,
  PageHead,
  TextArea,
  usd,
  when,
} from '../ui';
import { Security } from './Security';

const TABS = [
  { to: '/account', label: 'API keys' },
  { to: '/account/ssh', label: 'SSH keys' },
  { to: '/account/billing', label: 'Billing' },
  { to: '/account/security', label: 'Security' },
];

export function Account({ path }: { path: string }) {
  const tab = TABS.find((t) => t.to === path) ?? TABS[0]!;
  return (
    <>
      <PageHead title="Account" />
      <nav className="tabs" aria-label="Account sections">
        {TABS.map((t) => (
          <Link key={t.to} to={t.to} className="tab" current={t === tab}>
            {t.label}
          </Link>
        ))}
      </nav>
      {tab.to === '/account' && <ApiKeys />}
      {tab.to === '/account/ssh' && <SshKeys />}
      {tab.to === '/account/billing' && <Billing />}
      {tab.to === '/account/security' && <Security />}
    </>
  );
}

// --- API keys --------------------------------------------------------------------------------

const FAMILIES = [
  'user',
  'api_keys',
  'ssh_keys',
  'offers',
  'instances',
  'machines',
  'maintenance',
  'tfa',
  'billing',
] as const;

interface ApiKey {
  id: number;
  name: string;
  key_prefix: string;
  permissions: string | Record<string, string>;
  created_at: number;
  last_used_at: number | null;
}

function scopeText(p: ApiKey['permissions']): string {
  if (p === 'full' || p === null || p === undefined) return 'Full access';
  if (p === 'read_only') return 'Read only';
  return Object.entries(p)
    .map(([f, a]) => `${f}: ${a}`)
    .join(', ');
}

function ApiKeys() {
  const qc = useQueryClient();
  const keys = useQuery({
    queryKey: ['apikeys'],
    queryFn: () => api<{ apikeys: ApiKey[] }>('GET', '/api/v0/auth/apikeys/'),
  });
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'full' | 'read_only' | 'custom'>('full');
  const [custom, setCustom] = useState<Record<string, '' | 'read' | 'write'>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [created, setCreated] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);

  async function create(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const permissions =
        mode === 'custom' ? Object.fromEntries(Object.entries(custom).filter(([, v]) => v)) : mode;
      const r = await api<{ key: string }>('POST', '/api/v0/auth/apikeys/', {
        name: name.trim() || undefined,
        permissions,
      });
      setCreated(r.key);
      setName('');
      await qc.invalidateQueries({ queryKey: ['apikeys'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <section className="card" aria-labelledby="newkey-h">
        <h2 id="newkey-h">Create an API key</h2>
        <form onSubmit={create} className="stack">
          <Field label="Name" value={name} maxLength={100} onChange={(e) => setName(e.target.value)} />
          <fieldset className="choices inline">
            <legend>Permissions</legend>
            {(
              [
                ['full', 'Full access'],
                ['read_only', 'Read only'],
                ['custom', 'Choose per area'],
              ] as const
            ).map(([v, l]) => (
              <label key={v} className="choice">
                <input type="radio" name="key-mode" checked={mode === v} onChange={() => setMode(v)} />
                <span>{l}</span>
              </label>
            ))}
          </fieldset>
          {mode === 'custom' && (
            <div className="scopes">
              {FAMILIES.map((f) => (
                <label key={f} className="scope">
                  <span>{f}</span>
                  <select
                    aria-label={`Access to ${f}`}
                    value={custom[f] ?? ''}
                    onChange={(e) => setCustom({ ...custom, [f]: e.target.value as '' | 'read' | 'write' })}
                  >
                    <option value="">none</option>
                    <option value="read">read</option>
                    <option value="write">write</option>
                  </select>
                </label>
              ))}
            </div>
          )}
          <ErrorNote error={error} />
          <div className="row">
            <Button type="submit" variant="primary" busy={busy}>
              Create key
            </Button>
          </div>
        </form>
      </section>
      <section className="card table-card" aria-labelledby="keys-h">
        <div className="table-meta">
          <h2 id="keys-h">API keys</h2>
        </div>
        <ErrorNote error={keys.error} />
        {keys.data && keys.data.apikeys.length === 0 && <Empty>No API keys.</Empty>}
        {keys.data && keys.data.apikeys.length > 0 && (
          <div className="table-scroll">
            <table className="table" aria-label="API keys">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Key</th>
                  <th>Permissions</th>
                  <th>Created</th>
                  <th>Last used</th>
                  <th>
                    <span className="sr-only">Revoke</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.apikeys.map((k) => (
                  <tr key={k.id} data-key={k.id}>
                    <td data-label="Name">{k.name || '—'}</td>
                    <td data-label="Key" className="mono">
                      {k.key_prefix}…
                    </td>
                    <td data-label="Permissions">{scopeText(k.permissions)}</td>
                    <td data-label="Created">{when(k.created_at)}</td>
                    <td data-label="Last used">{k.last_used_at ? when(k.last_used_at) : 'never'}</td>
                    <td className="act">
                      <Button
                        variant="danger"
                        onClick={() => setRevoking(k)}
                        aria-label={`Revoke key ${k.name || k.key_prefix}`}
                      >
                        Revoke
                      </Button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <Dialog title="Your new API key" open={!!created} onClose={() => setCreated(null)}>
        <Note kind="warn">Copy it now: it is shown only this once.</Note>
        <div className="secret-box">
          <code className="mono" data-testid="new-key">
            {created}
          </code>
          {created && <CopyButton text={created} />}
        </div>
        <div className="row end">
          <Button variant="primary" onClick={() => setCreated(null)}>
            Done
          </Button>
        </div>
      </Dialog>
      <ConfirmRevoke k={revoking} onClose={() => setRevoking(null)} />
    </>
  );
}

function ConfirmRevoke({ k, onClose }: { k: ApiKey | null; onClose: () => void }) {
  const qc = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  return (
    <Dialog title="Revoke this key?" open={!!k} onClose={onClose}>
      {k && (
        <>
          <p>
            <strong>{k.name || k.key_prefix}</strong> stops working at once for every program that uses it. If
            this console signed in with it, you stay signed in.
          </p>
          <ErrorNote error={error} />
          <div className="row end">
            <Button variant="ghost" onClick={onClose}>
              Cancel
            </Button>
            <Button
              variant="danger"
              busy={busy}
              onClick={async () => {
                setBusy(true);
                setError(null);
                try {
                  await api('DELETE', `/api/v0/auth/apikeys/${k.id}/`);
                  await qc.invalidateQueries({ queryKey: ['apikeys'] });
                  onClose();
                } catch (e) {
                  setError(e);
                } finally {
                  setBusy(false);
                }
              }}
            >
              Revoke key
            </Button>
          </div>
        </>
      )}
    </Dialog>
  );
}

// --- SSH keys --------------------------------------------------------------------------------

interface SshKey {
  id: number;
  key_type: string;
  fingerprint: string;
  comment: string | null;
  created_at: number;
}

function SshKeys() {
  const qc = useQueryClient();
  const keys = useQuery({
    queryKey: ['sshkeys'],
    queryFn: () => api<{ ssh_keys: SshKey[] }>('GET', '/api/v0/ssh/'),
  });
  const [text, setText] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const add = async (e: FormEvent) => {
    e.preventDefault();
    setBusy('add');
    setError(null);
    try {
      await api('POST', '/api/v0/ssh/', { ssh_key: text.trim() });
      setText('');
      await qc.invalidateQueries({ queryKey: ['sshkeys'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  };
  const remove = async (k: SshKey) => {
    setBusy(`rm-${k.id}`);
    setError(null);
    try {
      await api('DELETE', `/api/v0/ssh/${k.id}/`);
      await qc.invalidateQueries({ queryKey: ['sshkeys'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  };
  return (
    <>
      <section className="card">
        <h2>Add an SSH key</h2>
        <form onSubmit={add} className="stack">
          <TextArea
            label="Public key"
            rows={3}
            required
            className="mono"
            placeholder="ssh-ed25519 AAAA… you@laptop"
            value={text}
            onChange={(e) => setText(e.target.value)}
            hint="The contents of ~/.ssh/id_ed25519.pub. New instances accept it for root."
          />
          <ErrorNote error={error} />
          <div className="row">
            <Button type="submit" variant="primary" busy={busy === 'add'}>
              Add key
            </Button>
          </div>
        </form>
      </section>
      <section className="card table-card">
        <div className="table-meta">
          <h2>SSH keys</h2>
        </div>
        <ErrorNote error={keys.error} />
        {keys.data && keys.data.ssh_keys.length === 0 && (
          <Empty>No SSH keys yet: add one before renting.</Empty>
        )}
        {keys.data && keys.data.ssh_keys.length > 0 && (
          <div className="table-scroll">
            <table className="table" aria-label="SSH keys">
              <thead>
                <tr>
                  <th>Type</th>
                  <th>Fingerprint</th>
                  <th>Comment</th>
                  <th>Added</th>
                  <th>
                    <span className="sr-only">Remove</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.ssh_keys.map((k) => (
                  <tr key={k.id}>
                    <td data-label="Type">{k.key_type}</td>
                    <td data-label="Fingerprint" className="mono small">
                      {k.fingerprint}
                    </td>
                    <td data-label="Comment">{k.comment || '—'}</td>
                    <td data-label="Added">{when(k.created_at)}</td>
                    <td className="act">
                      <Button variant="ghost" busy={busy === `rm-${k.id}`} onClick={() => remove(k)}>
                        Remove
                      </Button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}

// --- billing ---------------------------------------------------------------------------------

interface Charge {
  id: number;
  instance_id: number | null;
  kind: string;
  amount: number;
  period_start: number;
  period_end: number;
}

/** "Nov 24, 2026, 12:01 PM – 12:05 PM" when both ends fall on one day. */
function period(a: number, b: number): string {
  const da = new Date(a * 1000);
  const db = new Date(b * 1000);
  if (da.toDateString() !== db.toDateString()) return `${when(a)} – ${when(b)}`;
  return `${when(a)} – ${db.toLocaleTimeString(undefined, { timeStyle: 'short' })}`;
}

function Billing() {
  const bal = useQuery({
    queryKey: ['billing'],
    queryFn: () =>
      api<{
        balance: number;
        instances: {
          id: number;
          actual_status: string | null;
          accrued_cost: number;
          compute_dph: number;
          disk_dph: number;
        }[];
      }>('GET', '/api/v0/billing/'),
    refetchInterval: 15_000,
  });
  const charges = useQuery({
    queryKey: ['charges'],
    queryFn: () => api<{ charges: Charge[] }>('GET', '/api/v0/billing/charges/?limit=100'),
  });
  const perHour = (bal.data?.instances ?? []).reduce((s, i) => s + i.compute_dph + i.disk_dph, 0);
  return (
    <>
      <ErrorNote error={bal.error ?? charges.error} />
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
      <section className="card table-card">
        <div className="table-meta">
          <h2>Charges</h2>
        </div>
        {charges.data && charges.data.charges.length === 0 && <Empty>No charges yet.</Empty>}
        {charges.data && charges.data.charges.length > 0 && (
          <div className="table-scroll">
            <table className="table" aria-label="Charges">
              <thead>
                <tr>
                  <th>Period</th>
                  <th>Instance</th>
                  <th>Kind</th>
                  <th className="num">Amount</th>
                </tr>
              </thead>
              <tbody>
                {charges.data.charges.map((c) => (
                  <tr key={c.id}>
                    <td data-label="Period">{period(c.period_start, c.period_end)}</td>
                    <td data-label="Instance">{c.instance_id ? `#${c.instance_id}` : '—'}</td>
                    <td data-label="Kind">{c.kind}</td>
                    <td className="num" data-label="Amount">
                      {usd(c.amount, 4)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
