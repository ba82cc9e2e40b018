// Search and rent: filters become a POST /api/v0/bundles/ body; the table sorts by any column
// (the server orders, so the first page is the best of all matches) and pages through the rows;
// the rent dialog prices the offer with its disk and rents it with PUT /api/v0/asks/{id}/. Each
// offer shows its machine's benchmark figures (its fields, and the CPU score of its latest run from
// GET /api/v0/benchmarks) and its reliability.
import { useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { ApiError, client } from '../api';
import type { OfferRow as Offer } from '../../../src/client/client';
import type { SearchBody } from '../../../src/contract/api-types';
import {
  Button,
  Dialog,
  ErrorNote,
  Field,
  Link,
  Note,
  PageHead,
  SelectField,
  TextArea,
  gb,
  leastMbShownAs,
  navigate,
  usd,
} from '../ui';
import { useAction, useRefresh } from '../components/actions';
import { envBody, FormFooter } from '../components/forms';
import { Table } from '../components/Table';

interface Filters {
  gpu: string;
  gpus: string;
  maxPrice: string;
  minVram: string;
  minRel: string;
  location: string;
  verified: boolean;
}

const EMPTY: Filters = {
  gpu: '',
  gpus: '',
  maxPrice: '',
  minVram: '',
  minRel: '',
  location: '',
  // Like the CLI's and the official client's searches: verified machines only unless asked.
  verified: true,
};

const NUMBER_FILTERS: {
  key: 'maxPrice' | 'minVram' | 'minRel';
  label: string;
  max?: string;
  step?: string;
}[] = [
  { key: 'maxPrice', label: 'Max $/hour', step: '0.01' },
  { key: 'minVram', label: 'Min VRAM (GB)' },
  { key: 'minRel', label: 'Min reliability (%)', max: '100', step: '0.1' },
];

/** A column the server can order by: a field of the offer row. */
type OfferKey = keyof Offer & string;

type Col = {
  key: OfferKey;
  label: string;
  num?: boolean;
  /** false: not an offer field the server orders by. */
  sortable?: false;
  render: (o: Offer, cpuScores: Map<number, number>) => ReactNode;
};

/** A figure the agent measured: none measured yet is a dash. */
const figure = (n: number | null | undefined, digits: number, unit: string): string =>
  n ? `${n.toFixed(digits)} ${unit}` : '—';

/** The offer's benchmark figures in one cell, each named (docs/benchmarks.md). */
function benchCell(o: Offer, cpuScores: Map<number, number>): ReactNode {
  const cpu = cpuScores.get(o.machine_id ?? o.id);
  const items: [string, string, string][] = [
    ['dlperf', 'DLPerf', o.dlperf ? o.dlperf.toFixed(1) : '—'],
    ['total_flops', 'FP16', figure(o.total_flops, 1, 'TFLOPS')],
    ['cpu_score', 'CPU score', cpu === undefined ? '—' : String(Math.round(cpu))],
    ['disk_bw', 'Disk', figure(o.disk_bw, 0, 'MB/s')],
    ['inet', 'Net', `↑${Math.round(o.inet_up ?? 0)} ↓${Math.round(o.inet_down ?? 0)} Mbps`],
  ];
  return (
    <span className="bench">
      {items.map(([k, label, v]) => (
        <span key={k} data-bench={k}>
          <span className="muted">{label}</span> {v}
        </span>
      ))}
    </span>
  );
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

const COLS: Col[] = [
  { key: 'gpu_name', label: 'GPU', render: (o) => `${o.num_gpus}× ${o.gpu_name}` },
  { key: 'gpu_ram', label: 'VRAM', num: true, render: (o) => gb(o.gpu_ram) },
  {
    key: 'cpu_cores_effective',
    label: 'CPU',
    num: true,
    render: (o) => plural(o.cpu_cores_effective, 'core', 'cores'),
  },
  { key: 'cpu_ram', label: 'RAM', num: true, render: (o) => gb(o.cpu_ram) },
  { key: 'disk_space', label: 'Disk', num: true, render: (o) => `${Math.round(o.disk_space)} GB` },
  { key: 'inet_down', label: 'Net ↓', num: true, render: (o) => `${Math.round(o.inet_down)} Mbps` },
  { key: 'total_flops', label: 'Benchmarks', sortable: false, render: benchCell },
  {
    key: 'reliability',
    label: 'Reliability',
    num: true,
    render: (o) => `${(o.reliability * 100).toFixed(2)} %`,
  },
  { key: 'geolocation', label: 'Location', render: (o) => o.geolocation ?? '—' },
  { key: 'dph_total', label: '$/hour', num: true, render: (o) => usd(o.dph_total) },
];

/** Columns shown on request: what a renter choosing for a workload checks. */
const EXTRA_COLS: Col[] = [
  {
    key: 'cuda_max_good',
    label: 'CUDA',
    num: true,
    render: (o) => (o.cuda_max_good ? String(o.cuda_max_good) : '—'),
  },
  { key: 'dlperf', label: 'DLPerf', num: true, render: (o) => (o.dlperf ? o.dlperf.toFixed(1) : '—') },
  {
    key: 'flops_per_dphtotal',
    label: 'TFLOPS/$',
    num: true,
    render: (o) => (o.flops_per_dphtotal ? o.flops_per_dphtotal.toFixed(1) : '—'),
  },
  { key: 'driver_version', label: 'Driver', render: (o) => o.driver_version || '—' },
];

const PAGE = 20;

function body(f: Filters, sort: { key: string; dir: 'asc' | 'desc' }): SearchBody {
  const b: SearchBody = {
    rentable: { eq: true },
    order: [[sort.key, sort.dir]],
    limit: 1000,
    type: 'on-demand',
  };
  if (f.verified) b.verified = { eq: true };
  if (f.gpu) b.gpu_name = { eq: f.gpu };
  if (f.gpus) b.num_gpus = { eq: Number(f.gpus) };
  if (f.maxPrice) b.dph_total = { lte: Number(f.maxPrice) };
  // Kept: every offer whose VRAM column shows at least the GB asked for.
  if (f.minVram) b.gpu_ram = { gte: leastMbShownAs(Number(f.minVram)) };
  if (f.minRel) b.reliability = { gte: Number(f.minRel) / 100 };
  return b;
}

export function Search() {
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [sort, setSort] = useState<{ key: OfferKey; dir: 'asc' | 'desc' }>({
    key: 'dph_total',
    dir: 'asc',
  });
  const [page, setPage] = useState(0);
  const [renting, setRenting] = useState<Offer | null>(null);
  const [extra, setExtra] = useState<Set<OfferKey>>(new Set());
  const cols = useMemo(() => {
    const shownCols = EXTRA_COLS.filter((c) => extra.has(c.key));
    // Beside the VRAM column: what the GPU can run.
    return [...COLS.slice(0, 2), ...shownCols, ...COLS.slice(2)];
  }, [extra]);
  const [taken, setTaken] = useState<Set<number>>(new Set());

  const names = useQuery({
    queryKey: ['gpu-names'],
    queryFn: () => client.gpuNames(),
    staleTime: 60_000,
  });
  const offers = useQuery({
    queryKey: ['offers', filters, sort],
    queryFn: () => client.searchOffers(body(filters, sort)),
    placeholderData: keepPreviousData,
  });

  // Location is matched as text (any part of "Oregon, US"); the server knows only exact values.
  const rows = useMemo(() => {
    const loc = filters.location.trim().toLowerCase();
    return (offers.data?.offers ?? []).filter(
      (o) => !taken.has(o.id) && (!loc || (o.geolocation ?? '').toLowerCase().includes(loc)),
    );
  }, [offers.data, filters.location, taken]);
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  const shown = rows.slice(page * PAGE, page * PAGE + PAGE);
  // The CPU score is not an offer field: the shown machines' latest cpu_score rows (newest first).
  const machineIds = shown.map((o) => o.machine_id ?? o.id);
  const cpuRows = useQuery({
    queryKey: ['offer-cpu-scores', machineIds],
    queryFn: () =>
      client.searchBenchmarks({ machine_id: { in: machineIds }, name: { eq: 'cpu_score' } }, 1000),
    enabled: machineIds.length > 0,
    staleTime: 300_000,
  });
  const cpuScores = useMemo(() => {
    const m = new Map<number, number>();
    for (const r of cpuRows.data ?? []) if (!m.has(r.machine_id)) m.set(r.machine_id, r.score);
    return m;
  }, [cpuRows.data]);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilters(draft);
    setPage(0);
  };
  const sortBy = (key: OfferKey) => {
    setSort((s) => ({ key, dir: s.key === key && s.dir === 'asc' ? 'desc' : 'asc' }));
    setPage(0);
  };
  const set = (k: keyof Filters) => (e: { target: { value: string } }) =>
    setDraft({ ...draft, [k]: e.target.value });

  return (
    <>
      <PageHead title="Search offers" />
      <form className="filters card" onSubmit={apply} aria-label="Offer filters">
        <SelectField label="GPU model" value={draft.gpu} onChange={set('gpu')}>
          <option value="">Any</option>
          {names.data?.gpu_names.map((n) => (
            <option key={n}>{n}</option>
          ))}
        </SelectField>
        <SelectField label="GPUs" value={draft.gpus} onChange={set('gpus')}>
          <option value="">Any</option>
          {[1, 2, 4, 8].map((n) => (
            <option key={n}>{n}</option>
          ))}
        </SelectField>
        {NUMBER_FILTERS.map((n) => (
          <Field
            key={n.key}
            label={n.label}
            type="number"
            min="0"
            max={n.max}
            step={n.step}
            value={draft[n.key]}
            onChange={set(n.key)}
          />
        ))}
        <Field label="Location" placeholder="e.g. US" value={draft.location} onChange={set('location')} />
        <label className="check">
          <input
            type="checkbox"
            checked={draft.verified}
            onChange={(e) => setDraft({ ...draft, verified: e.target.checked })}
          />
          Verified machines only
        </label>
        <div className="filter-actions">
          <Button type="submit" variant="primary" busy={offers.isFetching}>
            Search
          </Button>
          <Button
            variant="ghost"
            onClick={() => {
              setDraft(EMPTY);
              setFilters(EMPTY);
              setPage(0);
            }}
          >
            Reset
          </Button>
        </div>
      </form>

      <ErrorNote error={offers.error} />
      <div className="card table-card">
        <div className="table-meta">
          <span aria-live="polite">
            {offers.isPending ? 'Searching…' : `${rows.length} offer${rows.length === 1 ? '' : 's'}`}
            {filters.verified ? ' on verified machines' : ', unverified machines included'}
          </span>
          <fieldset className="col-toggles">
            <legend className="sr-only">More columns</legend>
            {EXTRA_COLS.map((c) => (
              <label key={c.key} className="check small">
                <input
                  type="checkbox"
                  checked={extra.has(c.key)}
                  onChange={(e) => {
                    const next = new Set(extra);
                    if (e.target.checked) next.add(c.key);
                    else next.delete(c.key);
                    setExtra(next);
                  }}
                />
                {c.label}
              </label>
            ))}
          </fieldset>
        </div>
        <Table
          label="Offers"
          columns={cols.map((c) => ({
            className: c.num ? 'num' : undefined,
            'aria-sort':
              c.sortable === false
                ? undefined
                : sort.key === c.key
                  ? sort.dir === 'asc'
                    ? 'ascending'
                    : 'descending'
                  : 'none',
            label:
              c.sortable === false ? (
                c.label
              ) : (
                <button type="button" className="sort" onClick={() => sortBy(c.key)}>
                  {c.label}
                  <span className="sort-ind" aria-hidden="true">
                    {sort.key === c.key ? (sort.dir === 'asc' ? '▲' : '▼') : '↕'}
                  </span>
                </button>
              ),
          }))}
          actions="Rent"
          rows={shown}
          row={(o) => (
            <tr key={o.id} data-offer={o.id}>
              {cols.map((c) => (
                <td key={c.key} className={c.num ? 'num' : undefined} data-label={c.label}>
                  {c.key === 'gpu_name' ? (
                    <span className="gpu">
                      {c.render(o, cpuScores)}
                      {o.verified ? (
                        <span className="badge badge-ok" title="Verified machine">
                          verified
                        </span>
                      ) : (
                        <span
                          className="badge badge-warn"
                          title="Not verified by this installation's operator yet: the CLI's searches hide it unless asked"
                        >
                          unverified
                        </span>
                      )}
                    </span>
                  ) : (
                    c.render(o, cpuScores)
                  )}
                </td>
              ))}
              <td className="act">
                <Button variant="primary" onClick={() => setRenting(o)} aria-label={`Rent offer ${o.id}`}>
                  Rent
                </Button>
              </td>
            </tr>
          )}
        >
          {!offers.isPending && shown.length === 0 && (
            <tr>
              <td colSpan={cols.length + 1} className="empty">
                No offer matches these filters
                {filters.verified
                  ? ' on verified machines (untick “Verified machines only” to see the others)'
                  : ''}
                .
              </td>
            </tr>
          )}
        </Table>
        <nav className="pager" aria-label="Pages">
          <Button variant="ghost" disabled={page === 0} onClick={() => setPage(page - 1)}>
            Previous
          </Button>
          <span>
            Page {page + 1} of {pages}
          </span>
          <Button variant="ghost" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>
            Next
          </Button>
        </nav>
      </div>
      <RentDialog
        offer={renting}
        onClose={() => setRenting(null)}
        onTaken={(o) => setTaken((t) => new Set(t).add(o.id))}
        next={(o) => rows.find((r) => r.id !== o.id && !taken.has(r.id)) ?? null}
        onSwitch={setRenting}
      />
    </>
  );
}

interface RentForm {
  template: string;
  image: string;
  disk: string;
  onstart: string;
  env: string;
  ports: string;
  label: string;
}

function RentDialog({
  offer,
  onClose,
  onTaken,
  next,
  onSwitch,
}: {
  offer: Offer | null;
  onClose: () => void;
  onTaken: (o: Offer) => void;
  next: (o: Offer) => Offer | null;
  onSwitch: (o: Offer) => void;
}) {
  const refresh = useRefresh();
  const [f, setF] = useState<RentForm>({
    template: '',
    image: 'ubuntu:22.04',
    disk: '10',
    onstart: '',
    env: '',
    ports: '',
    label: '',
  });
  const { busy, error, setError, run } = useAction();
  const [takenOffer, setTakenOffer] = useState<Offer | null>(null);
  const set = (k: keyof RentForm) => (e: { target: { value: string } }) =>
    setF({ ...f, [k]: e.target.value });
  const templates = useQuery({
    queryKey: ['templates'],
    queryFn: () => client.searchTemplates(),
    enabled: !!offer,
  });
  // Instances are reached over SSH: without a registered key the server refuses the rental.
  const keys = useQuery({ queryKey: ['sshkeys'], queryFn: () => client.listSshKeys(), enabled: !!offer });
  const noKey = keys.data !== undefined && keys.data.length === 0;
  /** A template fills the form with its image, on-start script and environment, which stay editable. */
  const pickTemplate = (hash: string) => {
    const t = templates.data?.templates.find((x) => x.hash_id === hash);
    if (!t) {
      setF({ ...f, template: '' });
      return;
    }
    const env = [...(t.env ?? '').matchAll(/-e\s+([^\s=]+)=(\S*)/g)].map((m) => `${m[1]}=${m[2]}`).join('\n');
    const ports = [...(t.env ?? '').matchAll(/-p\s+(\d+):\d+/g)].map((m) => m[1]).join(', ');
    setF({
      ...f,
      template: hash,
      image: t.tag ? `${t.image ?? ''}:${t.tag}` : (t.image ?? f.image),
      onstart: t.onstart ?? '',
      env: env || f.env,
      ports: ports || f.ports,
    });
  };
  // An error is scrolled into sight where the dialog shows it, however long the form.
  const errorRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (error) errorRef.current?.scrollIntoView({ block: 'nearest' });
  }, [error]);

  const disk = Number(f.disk) || 0;
  const price = offer ? offer.dph_base + (offer.storage_cost * disk) / 720 : 0;
  const close = () => {
    setError(null);
    setTakenOffer(null);
    onClose();
  };

  async function rent(e: FormEvent) {
    e.preventDefault();
    if (!offer) return;
    await run(async () => {
      setTakenOffer(null);
      const env = envBody(f.env, f.ports);
      try {
        const r = await client.createInstance(offer.id, {
          image: f.image.trim(),
          disk,
          onstart: f.onstart || undefined,
          env,
          label: f.label.trim() || undefined,
          runtype: 'ssh',
          ...(f.template ? { template_hash_id: f.template } : {}),
        });
        void refresh('offers', 'instances');
        close();
        navigate(`/instances?new=${r.new_contract}`);
      } catch (err) {
        // Taken by someone else meanwhile: the dialog offers the next match.
        if (err instanceof ApiError && (err.status === 409 || err.code === 'offer_unavailable')) {
          onTaken(offer);
          setTakenOffer(offer);
          void refresh('offers');
        }
        throw err;
      }
    });
  }

  const alt = takenOffer ? next(takenOffer) : null;
  return (
    <Dialog
      title={offer ? `Rent ${offer.num_gpus}× ${offer.gpu_name}` : 'Rent'}
      open={!!offer}
      onClose={close}
    >
      {offer && (
        <form onSubmit={rent} className="rent-form" aria-label="Rent offer">
          <p className="muted">
            Offer {offer.id} · {offer.geolocation ?? 'unknown location'} · up to{' '}
            {Math.floor(offer.disk_space)} GB disk
          </p>
          {noKey && (
            <div className="note note-warn" role="status" data-testid="no-ssh-key">
              Instances are reached over SSH, and your account has no SSH key yet.{' '}
              <Link to="/account/ssh">Add an SSH key</Link>, then come back to rent.
            </div>
          )}
          <SelectField label="Template" value={f.template} onChange={(e) => pickTemplate(e.target.value)}>
            <option value="">None: the fields below</option>
            {(templates.data?.templates ?? []).map((t) => (
              <option key={t.hash_id} value={t.hash_id}>
                {t.name || t.hash_id} ({t.image}
                {t.tag ? `:${t.tag}` : ''})
              </option>
            ))}
          </SelectField>
          <ErrorNote error={templates.error} />
          <Field label="Image" required value={f.image} onChange={set('image')} />
          <Field
            label="Disk (GB)"
            type="number"
            min="1"
            max={Math.floor(offer.disk_space)}
            required
            value={f.disk}
            onChange={set('disk')}
          />
          <TextArea
            label="On-start script"
            rows={3}
            value={f.onstart}
            onChange={set('onstart')}
            hint="Runs when the instance starts (at most 4048 characters)."
          />
          <TextArea
            label="Environment"
            rows={2}
            placeholder="KEY=value, one per line"
            value={f.env}
            onChange={set('env')}
          />
          <Field label="Ports" placeholder="8080, 8888" value={f.ports} onChange={set('ports')} />
          <Field label="Label" value={f.label} onChange={set('label')} />
          <div className="price" aria-live="polite">
            <span>Price</span>
            <strong data-testid="rent-price">{usd(price)}/hour</strong>
            <small className="muted">
              compute {usd(offer.dph_base)} + disk {disk} GB × {usd(offer.storage_cost, 2)}/GB-month
            </small>
          </div>
          <div ref={errorRef}>
            <ErrorNote error={error instanceof ApiError && error.code === 'no_ssh_key' ? null : error}>
              {takenOffer && (
                <div className="row">
                  {alt ? (
                    <Button
                      variant="primary"
                      onClick={() => {
                        setError(null);
                        setTakenOffer(null);
                        onSwitch(alt);
                      }}
                    >
                      Rent the next offer ({alt.num_gpus}× {alt.gpu_name}, {usd(alt.dph_total)}/h)
                    </Button>
                  ) : (
                    <span>No other offer matches; change the filters.</span>
                  )}
                </div>
              )}
            </ErrorNote>
            {error instanceof ApiError && error.code === 'no_ssh_key' && (
              <div className="note note-error" role="alert">
                Your account has no SSH key, and instances are reached over SSH.{' '}
                <Link to="/account/ssh">Add an SSH key</Link> first.
              </div>
            )}
          </div>
          {!takenOffer && (
            <FormFooter busy={busy} disabled={noKey} onCancel={close}>
              Rent for {usd(price)}/h
            </FormFooter>
          )}
          {takenOffer && !error && <Note>Pick another offer.</Note>}
        </form>
      )}
    </Dialog>
  );
}
