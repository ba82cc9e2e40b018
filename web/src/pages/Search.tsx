// Search and rent: filters become a POST /api/v0/bundles/ body; the table sorts by any column
// (the server orders, so the first page is the best of all matches) and pages through the rows;
// the rent dialog prices the offer with its disk and rents it with PUT /api/v0/asks/{id}/.
import { useMemo, useState, type FormEvent } from 'react';
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
  verified: false,
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

type Col = { key: OfferKey; label: string; num?: boolean; render: (o: Offer) => string };

const COLS: Col[] = [
  { key: 'gpu_name', label: 'GPU', render: (o) => `${o.num_gpus}× ${o.gpu_name}` },
  { key: 'gpu_ram', label: 'VRAM', num: true, render: (o) => gb(o.gpu_ram) },
  { key: 'cpu_cores_effective', label: 'CPU', num: true, render: (o) => `${o.cpu_cores_effective} cores` },
  { key: 'cpu_ram', label: 'RAM', num: true, render: (o) => gb(o.cpu_ram) },
  { key: 'disk_space', label: 'Disk', num: true, render: (o) => `${Math.round(o.disk_space)} GB` },
  { key: 'inet_down', label: 'Net ↓', num: true, render: (o) => `${Math.round(o.inet_down)} Mbps` },
  {
    key: 'reliability',
    label: 'Reliability',
    num: true,
    render: (o) => `${(o.reliability * 100).toFixed(1)} %`,
  },
  { key: 'geolocation', label: 'Location', render: (o) => o.geolocation ?? '—' },
  { key: 'dph_total', label: '$/hour', num: true, render: (o) => usd(o.dph_total) },
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
          Verified only
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
          </span>
        </div>
        <Table
          label="Offers"
          columns={COLS.map((c) => ({
            className: c.num ? 'num' : undefined,
            'aria-sort': sort.key === c.key ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none',
            label: (
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
              {COLS.map((c) => (
                <td key={c.key} className={c.num ? 'num' : undefined} data-label={c.label}>
                  {c.key === 'gpu_name' ? (
                    <span className="gpu">
                      {c.render(o)}
                      {o.verified && (
                        <span className="badge badge-ok" title="Verified machine">
                          verified
                        </span>
                      )}
                    </span>
                  ) : (
                    c.render(o)
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
              <td colSpan={COLS.length + 1} className="empty">
                No offer matches these filters.
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
          <ErrorNote error={error}>
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
            {error instanceof ApiError && error.code === 'no_ssh_key' && (
              <p>
                <Link to="/account/ssh">Add an SSH key</Link> first.
              </p>
            )}
          </ErrorNote>
          {!takenOffer && (
            <FormFooter busy={busy} onCancel={close}>
              Rent for {usd(price)}/h
            </FormFooter>
          )}
          {takenOffer && !error && <Note>Pick another offer.</Note>}
        </form>
      )}
    </Dialog>
  );
}
