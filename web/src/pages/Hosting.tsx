// Hosting: the host's machines (GET /api/v0/machines/), list with a price or unlist, batch
// maintenance on the machines picked (start in the browser's time zone, sent as epoch seconds),
// the per-machine results exactly as the server answers them, the upcoming windows with cancel, and
// deleting a machine for good (POST /api/v0/machines/{id}/force_delete/, confirmed first). Each
// machine's reliability and report count (GET /api/v0/trust/machines/) link to its detail page
// (/hosting/machines/ID: verification, benchmarks, reliability parts, reports), and the host's
// payouts follow the earnings; both are loaded on demand.
import { lazy, Suspense, useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { ApiError, client } from '../api';
import type { MachineRow as Machine, MaintenanceWindow as Window } from '../../../src/client/client';
import type { MaintBatchEntry, MaintenanceCategory } from '../../../src/contract/api-types';
import {
  Button,
  Dialog,
  ErrorNote,
  Field,
  Link,
  Note,
  PageHead,
  SelectField,
  usePath,
  usd,
  when,
} from '../ui';
import { useAction, useActions, useRefresh } from '../components/actions';
import { FormFooter } from '../components/forms';
import { Table, TableCard } from '../components/Table';
import { EarningsCharts } from '../components/charts/EarningsCharts';
import { EarningsTable } from '../components/EarningsTable';

const HostMachine = lazy(() => import('./HostMachine'));
const Payouts = lazy(() => import('./Payouts'));

const loading = <div className="skeleton" aria-busy="true" />;

const CATEGORIES: MaintenanceCategory[] = ['power', 'internet', 'disk', 'gpu', 'software', 'other'];

const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;

function localInput(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

export function Hosting() {
  const path = usePath();
  const detail = /^\/hosting\/machines\/(\d+)\/?$/.exec(path);
  if (detail) {
    return (
      <Suspense fallback={loading}>
        <HostMachine key={detail[1]} id={Number(detail[1])} />
      </Suspense>
    );
  }
  return <Machines />;
}

function Machines() {
  const refresh = useRefresh();
  const machines = useQuery({
    queryKey: ['machines'],
    // With the operator's rule for how an unverified machine becomes verified.
    queryFn: () => client.machines(),
    refetchInterval: 15_000,
  });
  const windows = useQuery({
    queryKey: ['maintenances'],
    // The reply is the bare array of windows.
    queryFn: () => client.listMaintenances(),
  });
  const trust = useQuery({
    queryKey: ['host-trust'],
    queryFn: () => client.hostTrust(),
    refetchInterval: 60_000,
  });
  const trustOf = new Map((trust.data ?? []).map((t) => [t.machine_id, t]));
  const rows = machines.data?.machines ?? [];
  const unverified = rows.filter((m) => m.verification === 'unverified').map((m) => `#${m.id}`);
  const [picked, setPicked] = useState<Set<number>>(new Set());
  const [listing, setListing] = useState<Machine | null>(null);
  const [deleting, setDeleting] = useState<Machine | null>(null);
  const [deleted, setDeleted] = useState<string | null>(null);
  const { busy, error, run } = useActions<string>();

  const toggle = (id: number) =>
    setPicked((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const all = rows.length > 0 && rows.every((m) => picked.has(m.id));

  const act = (key: string, fn: () => Promise<unknown>) =>
    run(key, async () => {
      await fn();
      await refresh('machines', 'maintenances');
    });

  return (
    <>
      <PageHead title="Hosting" />
      <ErrorNote error={machines.error ?? error} />
      {deleted && <Note kind="ok">{deleted}</Note>}
      {unverified.length > 0 && (
        <Note kind="warn">
          {unverified.length === 1 ? `Machine ${unverified[0]} is` : `Machines ${unverified.join(', ')} are`}{' '}
          unverified: renters&apos; default searches (openrig&apos;s CLI and the official client) leave{' '}
          {unverified.length === 1 ? 'it' : 'them'} out. To be visible:{' '}
          {machines.data?.verification_rule ?? 'ask the operator of this installation to verify them'}.
        </Note>
      )}
      <TableCard
        title="Machines"
        id="machines-h"
        meta={<span className="muted small">{picked.size} selected</span>}
      >
        {machines.isPending ? (
          <div className="skeleton" aria-busy="true" />
        ) : (
          <Table
            label="Machines"
            columns={[
              {
                className: 'pick',
                label: (
                  <input
                    type="checkbox"
                    aria-label="Select all machines"
                    checked={all}
                    onChange={() => setPicked(all ? new Set() : new Set(rows.map((m) => m.id)))}
                  />
                ),
              },
              'Machine',
              'GPUs',
              'State',
              'Verification',
              { label: 'Reliability', className: 'num' },
              'Listing',
              { label: '$/GPU/h', className: 'num' },
              { label: 'Disk $/GB-mo', className: 'num' },
              'Last heartbeat',
              { label: 'Renters', className: 'num' },
              'Next maintenance',
            ]}
            actions="Actions"
            rows={rows}
            empty={
              <>
                No machines yet. Run <code>openrig agent</code> on a GPU host with your API key to add one.
              </>
            }
            row={(m) => (
              <tr key={m.id} data-machine={m.id}>
                <td className="pick">
                  <input
                    type="checkbox"
                    aria-label={`Select machine ${m.id}`}
                    checked={picked.has(m.id)}
                    onChange={() => toggle(m.id)}
                  />
                </td>
                <td data-label="Machine">
                  <Link to={`/hosting/machines/${m.id}`} label={`Details of machine ${m.id}`}>
                    #{m.id}
                  </Link>
                  {m.hostname ? <span className="muted small"> {m.hostname}</span> : null}
                </td>
                <td data-label="GPUs">
                  {m.num_gpus}× {m.gpu_name}
                </td>
                <td data-label="State">
                  <span className={`status status-${m.online ? 'ok' : 'bad'}`}>
                    <span className="dot" aria-hidden="true" />
                    {m.online ? 'Online' : 'Offline'}
                  </span>
                </td>
                <td data-label="Verification">
                  {m.verification === 'verified' ? (
                    <span className="badge badge-ok">verified</span>
                  ) : (
                    <span className="badge" title="Hidden from renters' default searches until verified">
                      unverified
                    </span>
                  )}
                </td>
                <td className="num" data-label="Reliability">
                  <span data-testid="reliability">{trustOf.get(m.id)?.reliability.toFixed(4) ?? '—'}</span>
                  {trustOf.get(m.id)?.reports ? (
                    <span className="muted small" data-testid="reports">
                      {' '}
                      {trustOf.get(m.id)!.reports} report{trustOf.get(m.id)!.reports === 1 ? '' : 's'}
                    </span>
                  ) : null}
                </td>
                <td data-label="Listing">
                  {m.listed ? (
                    <span className="badge badge-ok">listed</span>
                  ) : (
                    <span className="badge">unlisted</span>
                  )}
                  {m.rented && <span className="badge badge-info">rented</span>}
                </td>
                <td className="num" data-label="$/GPU/h">
                  {usd(m.listed_gpu_cost)}
                </td>
                <td className="num" data-label="Disk $/GB-mo">
                  {usd(m.listed_storage_cost)}
                </td>
                <td data-label="Last heartbeat">{m.last_heartbeat_at ? when(m.last_heartbeat_at) : '—'}</td>
                <td className="num" data-label="Renters">
                  {m.current_rentals_running}
                </td>
                <td data-label="Next maintenance">
                  {m.maintenances[0] ? when(m.maintenances[0].start_time) : '—'}
                </td>
                <td className="act">
                  {m.listed ? (
                    <Button
                      busy={busy === `unlist-${m.id}`}
                      onClick={() => act(`unlist-${m.id}`, () => client.unlistMachineById(m.id))}
                    >
                      Unlist
                    </Button>
                  ) : null}
                  <Button onClick={() => setListing(m)}>{m.listed ? 'Price' : 'List'}</Button>
                  <Button
                    variant="danger"
                    aria-label={`Delete machine ${m.id}`}
                    onClick={() => setDeleting(m)}
                  >
                    Delete
                  </Button>
                </td>
              </tr>
            )}
          />
        )}
      </TableCard>
      <EarningsTable />
      <EarningsCharts />
      <Suspense fallback={loading}>
        <Payouts />
      </Suspense>
      <Maintenance picked={[...picked].sort((a, b) => a - b)} />
      <Windows windows={windows.data ?? []} error={windows.error} />
      <ListDialog key={listing?.id ?? 0} machine={listing} onClose={() => setListing(null)} />
      {deleting && (
        <DeleteDialog
          machine={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={(msg) => {
            setPicked((s) => {
              const n = new Set(s);
              n.delete(deleting.id);
              return n;
            });
            setDeleted(msg);
            setDeleting(null);
          }}
        />
      )}
    </>
  );
}

/**
 * Deleting a machine for good: the host's own instances on it are destroyed and its maintenance
 * cancelled; while a client's instance is live on it the server refuses (409 machine_in_use), and
 * its message is shown.
 */
function DeleteDialog({
  machine,
  onClose,
  onDeleted,
}: {
  machine: Machine;
  onClose: () => void;
  onDeleted: (msg: string) => void;
}) {
  const refresh = useRefresh();
  const { busy, error, run } = useAction();
  const del = () =>
    run(async () => {
      const r = await client.deleteMachine(machine.id);
      await refresh('machines', 'maintenances', 'instances');
      const n = r.instances_destroyed;
      const w = r.maintenances_cancelled;
      onDeleted(
        `Machine #${r.machine_id} deleted: ${n} of your instance${n === 1 ? '' : 's'} destroyed, ${w} maintenance window${w === 1 ? '' : 's'} cancelled.`,
      );
    });
  return (
    <Dialog title={`Delete machine #${machine.id}?`} open onClose={onClose}>
      <p>
        The machine is removed for good: it leaves every search and this list, and its agent stops serving it.
      </p>
      <ul className="small">
        <li>Your own instances on it are destroyed, and their disks with them.</li>
        <li>Its upcoming maintenance is cancelled.</li>
        <li>
          While a renter&apos;s instance is on it (running or stopped) the deletion is refused: unlist the
          machine so no one else rents it, and delete it once those instances are destroyed.
        </li>
      </ul>
      {machine.current_rentals_running > 0 && (
        <Note kind="warn">
          {machine.current_rentals_running} instance
          {machine.current_rentals_running === 1 ? ' runs' : 's run'} on it now.
        </Note>
      )}
      <FormFooter
        error={error}
        busy={busy}
        variant="danger"
        onCancel={onClose}
        cancel="Keep it"
        onConfirm={del}
      >
        Delete machine
      </FormFooter>
    </Dialog>
  );
}

function ListDialog({ machine, onClose }: { machine: Machine | null; onClose: () => void }) {
  const refresh = useRefresh();
  // The dialog opens with the machine's current prices (it is keyed by the machine).
  const [gpu, setGpu] = useState(machine?.listed_gpu_cost ? String(machine.listed_gpu_cost) : '');
  const [disk, setDisk] = useState(machine?.listed_storage_cost ? String(machine.listed_storage_cost) : '');
  const { busy, error, run } = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!machine) return;
    await run(async () => {
      const prices: { price_gpu?: number; price_disk?: number } = {};
      if (gpu) prices.price_gpu = Number(gpu);
      if (disk) prices.price_disk = Number(disk);
      await client.listMachineAtPrices(machine.id, prices);
      await refresh('machines');
      onClose();
    });
  };
  return (
    <Dialog title={machine ? `List machine #${machine.id}` : 'List'} open={!!machine} onClose={onClose}>
      {machine && (
        <form onSubmit={submit}>
          <PriceField
            label="Price per GPU ($/hour)"
            current={machine.listed_gpu_cost}
            value={gpu}
            onChange={setGpu}
            hint={`Renters pay ${machine.num_gpus} × this for compute.`}
          />
          <PriceField
            label="Disk price ($/GB-month)"
            current={machine.listed_storage_cost}
            value={disk}
            onChange={setDisk}
            hint="Empty fields keep their current value."
          />
          <FormFooter error={error} busy={busy} onCancel={onClose}>
            {machine.listed ? 'Update price' : 'List for rent'}
          </FormFooter>
        </form>
      )}
    </Dialog>
  );
}

/** A price in dollars to a tenth of a cent; the current price shows while it is empty. */
function PriceField(p: {
  label: string;
  current: number | null;
  value: string;
  onChange: (v: string) => void;
  hint: string;
}) {
  return (
    <Field
      label={p.label}
      type="number"
      step="0.001"
      min="0"
      placeholder={p.current?.toString() ?? ''}
      value={p.value}
      onChange={(e) => p.onChange(e.target.value)}
      hint={p.hint}
    />
  );
}

function Maintenance({ picked }: { picked: number[] }) {
  const refresh = useRefresh();
  const [start, setStart] = useState(() => localInput(new Date(Date.now() + 24 * 3600_000)));
  const [hours, setHours] = useState('2');
  const [category, setCategory] = useState<MaintenanceCategory>('other');
  const { busy, error, run } = useAction();
  const [results, setResults] = useState<MaintBatchEntry[] | null>(null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    await run(async () => {
      setResults(null);
      try {
        const sdate = Math.floor(new Date(start).getTime() / 1000);
        const r = await client.scheduleMaintenanceBatch({
          machine_ids: picked,
          sdate,
          duration: Number(hours),
          maintenance_category: category,
        });
        setResults(r.results);
      } catch (err) {
        // A refused batch still answers each machine's result.
        const refused = err instanceof ApiError ? (err.body as { results?: unknown } | undefined) : undefined;
        if (Array.isArray(refused?.results)) setResults(refused.results as MaintBatchEntry[]);
        throw err;
      } finally {
        void refresh('maintenances', 'machines');
      }
    });
  }

  return (
    <section className="card" aria-labelledby="maint-h">
      <h2 id="maint-h">Schedule maintenance</h2>
      <p className="muted small">
        Renters of the selected machines are told by e-mail; you get one confirmation for the batch.
      </p>
      <form className="maint-form" onSubmit={submit}>
        <Field
          label={`Start (${tz})`}
          type="datetime-local"
          required
          value={start}
          onChange={(e) => setStart(e.target.value)}
        />
        <Field
          label="Duration (hours)"
          type="number"
          min="1"
          max="8760"
          step="0.5"
          required
          value={hours}
          onChange={(e) => setHours(e.target.value)}
        />
        <SelectField
          label="Category"
          value={category}
          onChange={(e) => setCategory(e.target.value as MaintenanceCategory)}
        >
          {CATEGORIES.map((c) => (
            <option key={c}>{c}</option>
          ))}
        </SelectField>
        <div className="filter-actions">
          <Button type="submit" variant="primary" busy={busy} disabled={picked.length === 0}>
            Schedule on {picked.length} machine{picked.length === 1 ? '' : 's'}
          </Button>
        </div>
      </form>
      {picked.length === 0 && <p className="muted small">Select machines in the table above first.</p>}
      <ErrorNote error={error} />
      <Table
        label="Maintenance results"
        columns={['Machine', 'Result', { label: 'notifications_sent', className: 'num' }, 'Message']}
        rows={results}
        row={(r, k) => (
          <tr key={k} data-result={r.machine_id ?? ''}>
            <td data-label="Machine">{r.machine_id === null ? '—' : `#${r.machine_id}`}</td>
            <td data-label="Result">
              {r.success ? (
                <span className="badge badge-ok">scheduled</span>
              ) : (
                <span className="badge badge-bad">{r.error}</span>
              )}
            </td>
            <td className="num" data-label="notifications_sent" data-testid="notifications-sent">
              {r.notifications_sent ?? '—'}
            </td>
            <td data-label="Message">{r.msg ?? ''}</td>
          </tr>
        )}
      />
    </section>
  );
}

function Windows({ windows, error }: { windows: Window[]; error: unknown }) {
  const refresh = useRefresh();
  const { busy, error: err, run } = useActions<number>();
  const [done, setDone] = useState<string | null>(null);
  const cancel = (w: Window) =>
    run(w.id, async () => {
      const r = await client.cancelMaintenance(w.machine_id);
      setDone(`Cancelled ${r.canceled} window${r.canceled === 1 ? '' : 's'} of machine #${w.machine_id}.`);
      await refresh('maintenances', 'machines');
    });
  return (
    <section className="card" aria-labelledby="windows-h">
      <h2 id="windows-h">Upcoming maintenance</h2>
      <ErrorNote error={error ?? err} />
      {done && <Note kind="ok">{done}</Note>}
      <Table
        label="Upcoming maintenance"
        columns={['Machine', 'Starts', 'Ends', 'Category']}
        actions="Cancel"
        rows={windows}
        empty="No maintenance scheduled."
        row={(w) => (
          <tr key={w.id}>
            <td data-label="Machine">#{w.machine_id}</td>
            <td data-label="Starts">{when(w.start_time)}</td>
            <td data-label="Ends">{when(w.end_time)}</td>
            <td data-label="Category">{w.maintenance_category}</td>
            <td className="act">
              <Button
                variant="ghost"
                busy={busy === w.id}
                onClick={() => cancel(w)}
                aria-label={`Cancel maintenance of machine ${w.machine_id}`}
                title="Cancels every current and upcoming window of this machine"
              >
                Cancel
              </Button>
            </td>
          </tr>
        )}
      />
    </section>
  );
}
