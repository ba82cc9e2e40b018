// Security activity, on the Security tab: the account's audit log (GET /api/v0/audit_logs/: its
// writes and sign-ins, newest first, never a value) and the addresses that used it
// (GET /api/v0/users/me/ipaddrs). Times are in UTC to the second, as the CLI shows them.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import type { AuditLogRow } from '../../../src/contract/api-types';
import { Button, ErrorNote, utc } from '../ui';
import { Table, TableCard } from '../components/Table';

const LIMIT = 200;
/** Rows a page of the audit log shows: a phone reads one page, not 200 stacked rows. */
const PAGE = 20;

const CREDENTIALS: Record<AuditLogRow['credential'], string> = {
  api_key: 'API key',
  instance_key: "Instance's key",
  session_key: 'CLI session',
  browser_session: 'Browser session',
  password: 'Password',
  login_secret: 'Sign-in code',
};

/** The path parameters, the query and the body's field names (never a value) of a request. */
function argsText(a: AuditLogRow['args'] | null): string {
  if (!a) return '';
  const parts: string[] = [];
  if (a.path)
    parts.push(
      Object.entries(a.path)
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
    );
  // A repeated query parameter (a list) shows its values joined by commas.
  if (a.query)
    parts.push(`?${new URLSearchParams(Object.entries(a.query).map(([k, v]) => [k, String(v)])).toString()}`);
  if (a.body?.length) parts.push(`fields: ${a.body.join(', ')}`);
  return parts.join(' · ');
}

export function Activity() {
  const audit = useQuery({
    queryKey: ['audit'],
    queryFn: () => client.auditLogs(LIMIT),
  });
  const addrs = useQuery({
    queryKey: ['ipaddrs'],
    queryFn: () => client.ipAddresses(),
  });
  const [page, setPage] = useState(0);
  const all = audit.data;
  const pages = Math.max(1, Math.ceil((all?.length ?? 0) / PAGE));
  const at = Math.min(page, pages - 1);
  const shown = all?.slice(at * PAGE, at * PAGE + PAGE);
  const reload = (
    <Button
      variant="ghost"
      busy={audit.isFetching || addrs.isFetching}
      onClick={() => void Promise.all([audit.refetch(), addrs.refetch()])}
    >
      Refresh
    </Button>
  );
  return (
    <>
      <TableCard title="Recent activity" id="audit-h" meta={reload}>
        <p className="muted small">
          The writes made with your credentials and the sign-in attempts on your account, newest first (the
          latest {LIMIT}). A failed sign-in you did not make is the sign to change your password.
        </p>
        <ErrorNote error={audit.error} />
        <Table
          label="Audit log"
          columns={['Time (UTC)', 'Address', 'Credential', 'Request', { label: 'Status', className: 'num' }]}
          rows={shown}
          empty="Nothing recorded yet."
          row={(r) => (
            <tr key={r.id} data-audit={r.id}>
              <td data-label="Time (UTC)" className="mono small">
                {utc(r.created_at)}
              </td>
              <td data-label="Address" className="mono small">
                {r.ip_address ?? '—'}
              </td>
              <td data-label="Credential">
                {CREDENTIALS[r.credential] ?? r.credential}
                {r.api_key_id !== null && <span className="muted small"> #{r.api_key_id}</span>}
              </td>
              <td data-label="Request">
                <span className="mono small">{r.api_route}</span>
                {r.args && <small className="muted block">{argsText(r.args)}</small>}
              </td>
              <td data-label="Status" className="num">
                <span className={`badge ${r.status < 400 ? 'badge-ok' : 'badge-bad'}`}>{r.status}</span>
              </td>
            </tr>
          )}
        />
        {pages > 1 && (
          <nav className="pager" aria-label="Audit log pages">
            <Button variant="ghost" disabled={at === 0} onClick={() => setPage(at - 1)}>
              Previous
            </Button>
            <span>
              Page {at + 1} of {pages}
            </span>
            <Button variant="ghost" disabled={at + 1 >= pages} onClick={() => setPage(at + 1)}>
              Next
            </Button>
          </nav>
        )}
      </TableCard>
      <TableCard title="Sign-in addresses" id="ipaddrs-h">
        <p className="muted small">
          The addresses that signed in to your account or used its keys, the most recently seen first.
        </p>
        <ErrorNote error={addrs.error} />
        <Table
          label="Sign-in addresses"
          columns={['Address', 'First seen (UTC)', 'Last seen (UTC)']}
          rows={addrs.data?.results}
          empty="No address recorded yet."
          row={(a) => (
            <tr key={a.ip}>
              <td data-label="Address" className="mono">
                {a.ip}
              </td>
              <td data-label="First seen (UTC)" className="mono small">
                {utc(a.first_seen)}
              </td>
              <td data-label="Last seen (UTC)" className="mono small">
                {utc(a.last_seen)}
              </td>
            </tr>
          )}
        />
      </TableCard>
    </>
  );
}
