// Volumes (docs/volumes.md): the caller's local volumes with the instance mounting each, and the
// volume offers to make one from (cheapest first). A volume is mounted by an instance created on
// its machine (search volumes' machine, then create the instance with the volume linked). A clone
// being made shows its progress in its status (`cloning N%`), read again every few seconds.
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import { Button, ErrorNote, Field, Note, PageHead, SelectField } from '../ui';
import { useAction, useRefresh } from '../components/actions';
import { FormFooter } from '../components/forms';
import { Table, TableCard } from '../components/Table';

interface VolumeRow {
  id: number;
  label: string;
  disk_space: number;
  machine_id: number;
  status: string;
  storage_cost: number;
  total_cost?: number;
  instances: number[];
  mount_path: string | null;
}

interface VolumeOffer {
  id: number;
  machine_id: number;
  disk_space: number;
  storage_cost: number;
  geolocation?: string;
}

export function Volumes() {
  const refresh = useRefresh();
  const volumes = useQuery({
    queryKey: ['volumes'],
    queryFn: () =>
      client.request<{ volumes: VolumeRow[] }>('GET', '/api/v0/volumes', {
        query: { owner: 'me', type: 'local_volume' },
      }),
    refetchInterval: (q) =>
      q.state.data?.volumes.some((v) => v.status.startsWith('cloning')) ? 3000 : false,
  });
  const offers = useQuery({
    queryKey: ['volume-offers'],
    queryFn: () =>
      client.request<{ offers: VolumeOffer[] }>('POST', '/api/v0/volumes/search/', {
        body: { order: [['storage_cost', 'asc']], limit: 50 },
      }),
  });
  const [offer, setOffer] = useState('');
  const [size, setSize] = useState('15');
  const [label, setLabel] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const del = useAction();
  const [cloneSrc, setCloneSrc] = useState('');
  const [cloneOffer, setCloneOffer] = useState('');
  const [cloneSize, setCloneSize] = useState('');
  const [cloned, setCloned] = useState<string | null>(null);
  const cloning = useAction();
  const ready = (volumes.data?.volumes ?? []).filter((v) => v.status === 'ready');

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    await run(async () => {
      const body: Record<string, unknown> = { id: Number(offer), size: Number(size) };
      if (label.trim()) body.name = label.trim();
      const r = await client.request<{ msg?: string }>('PUT', '/api/v0/volumes/', { body });
      setDone(r.msg ?? 'Created');
      setLabel('');
      await refresh('volumes', 'volume-offers');
    });
  };
  const clone = async (e: FormEvent) => {
    e.preventDefault();
    setCloned(null);
    await cloning.run(async () => {
      const body: Record<string, unknown> = { src_id: Number(cloneSrc), dst_id: Number(cloneOffer) };
      if (cloneSize.trim()) body.size = Number(cloneSize);
      const r = await client.request<{ msg?: string }>('POST', '/api/v0/volumes/copy/', { body });
      setCloned(r.msg ?? 'Cloning');
      await refresh('volumes', 'volume-offers');
    });
  };
  const remove = (id: number) =>
    del.run(async () => {
      await client.request('DELETE', '/api/v0/volumes/', { query: { id } });
      await refresh('volumes', 'volume-offers');
    });

  return (
    <>
      <PageHead title="Volumes" />
      <TableCard title="Your volumes" id="volumes-h">
        <ErrorNote error={volumes.error} />
        <ErrorNote error={del.error} />
        <Table
          label="Your volumes"
          columns={['ID', 'Label', 'GB', 'Machine', 'Status', 'Mounted by', '$/GB/month', 'Charged']}
          actions="Actions"
          rows={volumes.data?.volumes}
          empty="No volumes."
          row={(v) => (
            <tr key={v.id} data-volume={v.id}>
              <td data-label="ID">{v.id}</td>
              <td data-label="Label">{v.label || <em className="muted">none</em>}</td>
              <td data-label="GB">{v.disk_space}</td>
              <td data-label="Machine">{v.machine_id}</td>
              <td data-label="Status">{v.status}</td>
              <td data-label="Mounted by" data-testid="mounted-by">
                {v.instances.length > 0
                  ? `instance ${v.instances.join(', ')} at ${v.mount_path ?? '?'}`
                  : '—'}
              </td>
              <td data-label="$/GB/month">{v.storage_cost.toFixed(3)}</td>
              <td data-label="Charged">${(v.total_cost ?? 0).toFixed(4)}</td>
              <td className="act">
                <Button
                  variant="ghost"
                  aria-label={`Delete volume ${v.id}`}
                  disabled={v.instances.length > 0 || del.busy}
                  title={v.instances.length > 0 ? 'Destroy the instance mounting it first' : undefined}
                  onClick={() => void remove(v.id)}
                >
                  Delete
                </Button>
              </td>
            </tr>
          )}
        />
      </TableCard>
      <section className="card" aria-labelledby="newvol-h">
        <h2 id="newvol-h">Make a volume</h2>
        <p className="muted small">
          A volume lives on one machine and outlives the instances using it. It is charged its offer&apos;s
          price per GB and month until you delete it. To mount it, create an instance on the same machine with
          the volume linked (the command line: <code>--link-volume ID --mount-path /data</code>).
        </p>
        <ErrorNote error={offers.error} />
        <Table
          label="Volume offers"
          columns={['Offer', 'Machine', 'Free GB', '$/GB/month', 'Country']}
          rows={offers.data?.offers}
          empty="No volume offers."
          row={(o) => (
            <tr key={o.id} data-offer={o.id}>
              <td data-label="Offer">{o.id}</td>
              <td data-label="Machine">{o.machine_id}</td>
              <td data-label="Free GB">{o.disk_space}</td>
              <td data-label="$/GB/month">{o.storage_cost.toFixed(3)}</td>
              <td data-label="Country">{o.geolocation ?? ''}</td>
            </tr>
          )}
        />
        <form onSubmit={create} className="stack">
          <Field
            label="Offer"
            required
            inputMode="numeric"
            pattern="[0-9]+"
            value={offer}
            onChange={(e) => setOffer(e.target.value)}
          />
          <Field
            label="Size (GB)"
            required
            inputMode="numeric"
            pattern="[0-9]+"
            value={size}
            onChange={(e) => setSize(e.target.value)}
          />
          <Field label="Label" maxLength={64} value={label} onChange={(e) => setLabel(e.target.value)} />
          {done && <Note kind="ok">{done}</Note>}
          <FormFooter error={error} busy={busy} place="start">
            Make volume
          </FormFooter>
        </form>
      </section>
      <section className="card" aria-labelledby="clonevol-h">
        <h2 id="clonevol-h">Clone a volume</h2>
        <p className="muted small">
          A new volume made from an offer (on its machine, this one or another), holding a copy of a ready
          volume&apos;s files. Its status shows the copy&apos;s progress; it is ready once copied.
        </p>
        <form onSubmit={clone} className="stack">
          <SelectField label="Volume" required value={cloneSrc} onChange={(e) => setCloneSrc(e.target.value)}>
            <option value="">Choose a ready volume</option>
            {ready.map((v) => (
              <option key={v.id} value={v.id}>
                {`${v.id}${v.label ? ` (${v.label})` : ''}, ${v.disk_space} GB on machine ${v.machine_id}`}
              </option>
            ))}
          </SelectField>
          <Field
            label="Into offer"
            required
            inputMode="numeric"
            pattern="[0-9]+"
            value={cloneOffer}
            onChange={(e) => setCloneOffer(e.target.value)}
          />
          <Field
            label="Size (GB)"
            inputMode="numeric"
            pattern="[0-9]+"
            placeholder="the volume's"
            value={cloneSize}
            onChange={(e) => setCloneSize(e.target.value)}
          />
          {cloned && <Note kind="ok">{cloned}</Note>}
          <FormFooter error={cloning.error} busy={cloning.busy} place="start">
            Clone volume
          </FormFooter>
        </form>
      </section>
    </>
  );
}
