// Instances: the list polls GET /api/v0/instances/ (every 2 s while one is changing state, every
// 10 s otherwise), says what each state means, gives the SSH command to copy and the cost so far,
// shows the logs its host sends, and stops, starts, reboots, labels, updates (a new image, env,
// on-start script or template, from which its host recreates the container) and destroys (destroy
// and update ask first). A renter reports a problem with the instance's machine from its card (POST
// /api/v0/machines/{id}/reports/); the server's refusal (one report a machine a day) is shown as is.
import { useEffect, useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import {
  REPORT_PROBLEMS,
  type InstanceRow as Instance,
  type MachineReport,
  type ReportProblem,
  type SshKeyRow as SshKey,
} from '../../../src/client/client';
import { problemText } from '../components/trust';
import type { UpdateInstanceBody } from '../../../src/contract/api-types';
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
  SelectField,
  TextArea,
  duration,
  usd,
  when,
} from '../ui';
import { useAction, useActions, useRefresh } from '../components/actions';
import { envBody, FormFooter } from '../components/forms';
import { UsageCharts } from '../components/charts/UsageCharts';
import { instanceState, isSettled } from '../../../src/client/instance-state';

const STATES: Record<string, { label: string; tone: string; meaning: string }> = {
  provisioning: {
    label: 'Provisioning',
    tone: 'wait',
    meaning: 'The host is preparing the instance.',
  },
  loading: { label: 'Loading', tone: 'wait', meaning: 'The image is downloading; it boots next.' },
  running: { label: 'Running', tone: 'ok', meaning: 'Ready: connect over SSH. Compute and disk are billed.' },
  stopped: {
    label: 'Stopped',
    tone: 'idle',
    meaning: 'Not running: only disk is billed. Start it again or destroy it.',
  },
  stopping: { label: 'Stopping', tone: 'wait', meaning: 'The host is stopping the instance.' },
  starting: { label: 'Starting', tone: 'wait', meaning: 'The host is starting the instance again.' },
  exited: {
    label: 'Exited',
    tone: 'bad',
    meaning:
      'It stopped by itself and stays stopped: only disk is billed. Start it again, or destroy it and rent another offer.',
  },
  failed: {
    label: 'Failed to start',
    tone: 'bad',
    meaning:
      'The host could not start it (its reason is below). Only disk is billed. Start it again, or destroy it and rent another offer.',
  },
  unknown: {
    label: 'No heartbeat',
    tone: 'bad',
    meaning:
      'The host has not reported lately. It keeps running there if the host does; this page shows it again when the host reports. Compute is not billed meanwhile; disk is, until you destroy it.',
  },
  offline: {
    label: 'Host offline',
    tone: 'bad',
    meaning:
      'The server lost contact with the host. If the host comes back, the instance resumes as it was (same disk and SSH port). Compute is not billed meanwhile; disk is, until you destroy it.',
  },
};

/** The state the card shows (src/client/instance-state.ts). */
export const stateOf = (i: Instance): string => instanceState(i);

const settled = (i: Instance) => isSettled(instanceState(i));

/**
 * The private key to log in with, as far as the server knows it: a registered key whose comment is
 * the path of its private file (the demo registers its key so) is named with `-i`; otherwise the
 * card says which registered key the instance accepts.
 */
export function keyFileOf(keys: readonly SshKey[]): string | null {
  const files = keys.map((k) => (k.comment ?? '').trim()).filter((c) => /^\/\S+$/.test(c));
  return files.length === 1 ? files[0]! : null;
}

export function sshCommand(i: Instance, keyFile: string | null = null): string | null {
  if (!i.ssh_host || !i.ssh_port) return null;
  return `ssh ${keyFile ? `-i ${keyFile} ` : ''}-p ${i.ssh_port} root@${i.ssh_host}`;
}

/** Each container port the instance asked for with the host port it is published on (SSH's apart). */
export function portMappings(i: Instance): { port: string; hostPort: string; connect: string }[] {
  const out: { port: string; hostPort: string; connect: string }[] = [];
  for (const [port, binds] of Object.entries(i.ports ?? {})) {
    if (port === '22/tcp' || !Array.isArray(binds)) continue;
    for (const b of binds as { HostIp?: string; HostPort?: string }[]) {
      if (!b.HostPort) continue;
      const host = i.ssh_host ?? i.public_ipaddr ?? (b.HostIp && b.HostIp !== '0.0.0.0' ? b.HostIp : null);
      out.push({ port, hostPort: b.HostPort, connect: host ? `${host}:${b.HostPort}` : b.HostPort });
    }
  }
  return out.sort((a, b) => parseInt(a.port) - parseInt(b.port));
}

export function Instances() {
  const fresh = Number(new URLSearchParams(location.search).get('new')) || null;
  const list = useQuery({
    queryKey: ['instances'],
    queryFn: () => client.listInstances(),
    refetchInterval: (q) => {
      const rows = q.state.data?.instances ?? [];
      return rows.some((i) => !settled(i)) ? 2000 : 10_000;
    },
    refetchIntervalInBackground: false,
  });
  const rows = list.data?.instances ?? [];
  const keys = useQuery({ queryKey: ['sshkeys'], queryFn: () => client.listSshKeys() });
  const noIsolation = rows.some((i) => i.machine_runtime === 'process');
  return (
    <>
      <PageHead title="Instances">
        <span className="muted small" aria-live="polite">
          {list.isFetching
            ? 'Updating…'
            : `Updated ${new Date(list.dataUpdatedAt || Date.now()).toLocaleTimeString()}`}
        </span>
      </PageHead>
      <ErrorNote error={list.error} />
      {fresh && rows.some((i) => i.id === fresh) && (
        <Note kind="ok">Instance {fresh} created. It shows “Running” once the host has booted it.</Note>
      )}
      {noIsolation && (
        <Note kind="warn">
          <strong>No isolation.</strong> Instances marked “host process” run as plain processes of their
          host&apos;s user (the demo&apos;s runtime): each has its own home and working directory, but
          anything it does outside them happens on the host itself. Use them for trying openrig out, not for
          work you need kept apart.
        </Note>
      )}
      {list.isPending ? (
        <div className="card skeleton" aria-busy="true" />
      ) : rows.length === 0 ? (
        <div className="card">
          <Empty>
            No instances yet. <Link to="/search">Search offers</Link> to rent one.
          </Empty>
        </div>
      ) : (
        <ul className="instances" aria-label="Your instances">
          {rows.map((i) => (
            <InstanceCard key={i.id} i={i} highlight={i.id === fresh} keys={keys.data ?? []} />
          ))}
        </ul>
      )}
    </>
  );
}

function InstanceCard({ i, highlight, keys }: { i: Instance; highlight: boolean; keys: SshKey[] }) {
  const refresh = useRefresh();
  const st = stateOf(i);
  const info = STATES[st] ?? { label: st, tone: 'idle', meaning: '' };
  const keyFile = keyFileOf(keys);
  const ssh = sshCommand(i, keyFile);
  const ports = portMappings(i);
  const outOfSight = st === 'offline' || st === 'unknown';
  const { busy, error, run } = useActions<string>();
  const [confirmDestroy, setConfirmDestroy] = useState(false);
  const [labelling, setLabelling] = useState(false);
  const [showLogs, setShowLogs] = useState(false);
  const [updating, setUpdating] = useState(false);
  const [reporting, setReporting] = useState(false);

  const act = (what: string, fn: () => Promise<unknown>) =>
    run(what, async () => {
      await fn();
      await refresh('instances');
    });
  // Reboot: the host restarts the container and keeps its disk.
  const reboot = () => act('reboot', () => client.rebootInstance(i.id));

  const can = (a: string) => i.allowed_actions.includes(a);
  return (
    <li
      className={`card instance ${highlight ? 'highlight' : ''}`}
      data-instance={i.id}
      aria-label={`Instance ${i.id}`}
    >
      <div className="instance-head">
        <div>
          <h2>
            {i.label ? (
              <>
                {i.label}
                <span className="muted small"> #{i.id}</span>
              </>
            ) : (
              `Instance #${i.id}`
            )}
          </h2>
          <p className="muted small">
            {[`${i.num_gpus}× ${i.gpu_name}`, i.image_uuid, diskText(i), i.geolocation]
              .filter(Boolean)
              .join(' · ')}
          </p>
          {i.machine_runtime === 'process' && (
            <span
              className="badge badge-warn runtime-badge"
              title="A plain process of the host's user: no isolation"
            >
              host process, no isolation
            </span>
          )}
        </div>
        <span className={`status status-${info.tone}`} data-status={st}>
          <span className="dot" aria-hidden="true" />
          {info.label}
        </span>
      </div>
      <p className="meaning">{info.meaning}</p>
      {outOfSight && typeof i.host_last_seen === 'number' && (
        <p className="small" data-testid="last-seen">
          Last heard from its host {when(i.host_last_seen)}.
        </p>
      )}
      {i.status_msg &&
        (st === 'exited' || st === 'failed' ? (
          <div className="note note-error" data-testid="host-reason">
            <strong>The host says:</strong> <span className="break-anywhere">{i.status_msg}</span>
          </div>
        ) : (
          <details className="log">
            <summary>Latest message from the host</summary>
            <pre>{i.status_msg}</pre>
          </details>
        ))}
      {i.bid_waiting === true && (
        <div className="note" data-testid="bid-waiting">
          <strong>Waiting for the machine:</strong>{' '}
          <span className="break-anywhere">{i.waiting_reason ?? i.status_msg}</span>
        </div>
      )}
      <Maintenance i={i} />
      <dl className="facts">
        <div>
          <dt>Cost so far</dt>
          <dd data-testid="cost">{usd(i.accrued_cost, 4)}</dd>
        </div>
        <div>
          <dt>Price</dt>
          <dd>{usd(i.dph_total)}/h</dd>
        </div>
        {i.market_tier !== undefined && (
          <div>
            <dt>Tier</dt>
            <dd data-testid="market-tier">
              {i.market_tier === 'bid'
                ? `interruptible, bid ${usd(i.dph_base, 4)}/h${typeof i.min_bid === 'number' ? ` (${usd(i.min_bid, 4)}/h wins the machine now)` : ''}`
                : i.market_tier === 'owner'
                  ? "owner's own rental"
                  : 'on-demand'}
            </dd>
          </div>
        )}
        <div>
          <dt>Started</dt>
          <dd>{when(i.start_date)}</dd>
        </div>
        {typeof i.gpu_util === 'number' && (
          <div>
            <dt>GPU utilisation</dt>
            <dd data-testid="gpu-util">{Math.round(i.gpu_util)} %</dd>
          </div>
        )}
      </dl>
      <UsageCharts instanceId={i.id} />
      {ssh && st === 'running' ? (
        <div className="ssh">
          <label className="ssh-label" htmlFor={`ssh-${i.id}`}>
            SSH
          </label>
          <input
            id={`ssh-${i.id}`}
            className="mono"
            readOnly
            value={ssh}
            onFocus={(e) => e.target.select()}
          />
          <CopyButton text={ssh} label="Copy SSH command" />
        </div>
      ) : (
        <p className="muted small ssh-wait">The SSH command appears here once the instance runs.</p>
      )}
      {ssh && st === 'running' && !keyFile && (
        <p className="muted small" data-testid="ssh-key-hint">
          {keys.length === 0 ? (
            <>
              No SSH key is registered: <Link to="/account/ssh">add one</Link>, then it reaches instances
              rented afterwards.
            </>
          ) : (
            <>
              Log in with the private key of{' '}
              {keys.length === 1 ? 'your registered SSH key' : 'one of your registered SSH keys'}{' '}
              {keys.map((k) => k.comment || k.fingerprint).join(', ')} (add <span className="mono">-i</span>{' '}
              and its file when it is not one ssh tries by itself).
            </>
          )}
        </p>
      )}
      {ports.length > 0 && st === 'running' && (
        <div className="ports" aria-label="Ports">
          <strong className="small">Ports</strong>
          <ul className="port-list">
            {ports.map((p) => (
              <li key={`${p.port}-${p.hostPort}`} data-port={p.port}>
                <span className="mono">
                  {p.port.replace('/tcp', '')} → {p.hostPort}
                </span>
                <span className="mono break-anywhere">{p.connect}</span>
                <CopyButton text={p.connect} label={`Copy address of port ${p.port.replace('/tcp', '')}`} />
              </li>
            ))}
          </ul>
        </div>
      )}
      {Array.isArray(i.portal) && i.portal.length > 0 && st === 'running' && (
        // The gateway's URLs (docs/gateway.md): on this server's own host the console session
        // opens the owner's ports; with a gateway domain the server hands over to the port's host.
        <div className="ports" aria-label="Gateway">
          <strong className="small">Open in the browser</strong>
          <ul className="port-list">
            {i.portal.map((p) => (
              <li key={`gw-${p.port}`} data-gateway-port={p.port}>
                <a href={p.path} target="_blank" rel="noopener noreferrer">
                  {p.name ?? p.port}
                </a>
                <span className="small">{p.public ? 'public' : 'only you'}</span>
              </li>
            ))}
          </ul>
        </div>
      )}
      <ErrorNote error={error} />
      <div className="row actions">
        {can('stop') && (
          <Button
            busy={busy === 'stop'}
            onClick={() => act('stop', () => client.setInstanceState(i.id, 'stopped'))}
          >
            Stop
          </Button>
        )}
        {can('start') && (
          <Button
            busy={busy === 'start'}
            onClick={() => act('start', () => client.setInstanceState(i.id, 'running'))}
          >
            Start
          </Button>
        )}
        {st === 'running' && (
          <Button busy={busy === 'reboot'} onClick={reboot}>
            Reboot
          </Button>
        )}
        <Button aria-expanded={showLogs} onClick={() => setShowLogs(!showLogs)}>
          Logs
        </Button>
        <Button onClick={() => setLabelling(true)}>Label</Button>
        {st !== 'offline' && st !== 'unknown' && <Button onClick={() => setUpdating(true)}>Update</Button>}
        <Button onClick={() => setReporting(true)}>Report a problem</Button>
        <Button variant="danger" onClick={() => setConfirmDestroy(true)}>
          Destroy
        </Button>
      </div>
      {showLogs && <Logs id={i.id} />}
      {reporting && <ReportDialog machineId={i.machine_id} onClose={() => setReporting(false)} />}
      {updating && <UpdateDialog i={i} onClose={() => setUpdating(false)} />}
      <Dialog
        title={`Destroy instance ${i.id}?`}
        open={confirmDestroy}
        onClose={() => setConfirmDestroy(false)}
      >
        <p>Its disk and everything on it are deleted, and all billing stops. This cannot be undone.</p>
        <FormFooter
          error={error}
          busy={busy === 'destroy'}
          variant="danger"
          onCancel={() => setConfirmDestroy(false)}
          cancel="Keep it"
          onConfirm={() =>
            act('destroy', async () => {
              await client.destroyInstance(i.id);
              setConfirmDestroy(false);
            })
          }
        >
          Destroy instance
        </FormFooter>
      </Dialog>
      <LabelDialog
        open={labelling}
        current={i.label ?? ''}
        onClose={() => setLabelling(false)}
        onSave={(label) =>
          act('label', async () => {
            await client.labelInstance(i.id, label);
            setLabelling(false);
          })
        }
        busy={busy === 'label'}
      />
    </li>
  );
}

/** The maintenance windows its host scheduled on its machine: when, how long, what kind. */
function Maintenance({ i }: { i: Instance }) {
  const windows = (i.maintenances ?? []) as {
    start_time?: number;
    end_time?: number;
    duration_hours?: number;
    maintenance_category?: string;
  }[];
  if (windows.length === 0) return null;
  const now = Date.now() / 1000;
  return (
    <div className="note note-warn" role="status" data-testid="maintenance">
      <strong>Maintenance scheduled on its machine</strong>
      <ul className="maint-list">
        {windows.map((w, k) => {
          const hours = w.duration_hours ?? ((w.end_time ?? 0) - (w.start_time ?? 0)) / 3600;
          const ongoing = (w.start_time ?? 0) <= now && now < (w.end_time ?? 0);
          return (
            <li key={k}>
              {ongoing ? 'Now, until ' + when(w.end_time) : when(w.start_time)}, for{' '}
              {duration(Math.round(hours * 3600))} ({w.maintenance_category || 'maintenance'})
            </li>
          );
        })}
      </ul>
      <span className="small">
        The host may stop the instance meanwhile; save what you need before it starts.
      </span>
    </div>
  );
}

/**
 * The instance's logs: PUT request_logs asks its host for them and answers a result URL, which
 * answers 404 until the host has sent them (polled every second for up to 30 s).
 */
function Logs({ id }: { id: number }) {
  const [text, setText] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const load = () =>
    run(async () => {
      const r = await client.requestLogs(id, { tail: 200 });
      const end = Date.now() + 30_000;
      for (;;) {
        const res = await client.readResult(r.result_url);
        if (res.status >= 200 && res.status < 300) {
          setText(res.text);
          break;
        }
        if (res.status !== 404) throw new Error(`The logs could not be read (${res.status})`);
        if (Date.now() > end) throw new Error('The host has not sent the logs within 30 seconds; try again');
        await new Promise((ok) => setTimeout(ok, 1000));
      }
    });
  useEffect(() => {
    void load();
    // Loaded once when opened; "Refresh" asks again.
  }, [id]);
  return (
    <section className="logs" aria-label={`Logs of instance ${id}`}>
      <div className="row">
        <strong>Logs</strong>
        <Button variant="ghost" busy={busy} onClick={load}>
          Refresh
        </Button>
      </div>
      <ErrorNote error={error} />
      {text !== null && (
        <pre className="log-text" data-testid="logs">
          {text || '(no output yet)'}
        </pre>
      )}
      {text === null && busy && <p className="muted small">Asking the host for the logs…</p>}
    </section>
  );
}

/**
 * A report of a problem with the machine an instance runs on: its host sees it (not who sent it), and
 * it weighs on the machine's reliability. The server keeps one a machine a UTC day per renter.
 */
function ReportDialog({ machineId, onClose }: { machineId: number; onClose: () => void }) {
  const [problem, setProblem] = useState<ReportProblem>('other');
  const [message, setMessage] = useState('');
  const [sent, setSent] = useState<MachineReport | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const r = await client.reportMachine(machineId, problem, message.trim());
      setSent(r.report);
    });
  };
  return (
    <Dialog title={`Report a problem with machine #${machineId}`} open onClose={onClose}>
      {sent ? (
        <>
          <Note kind="ok">
            <span data-testid="report-sent" data-report={sent.id}>
              Report #{sent.id} sent {when(sent.created_at)}: {problemText(sent.problem)}
              {sent.message ? ` — ${sent.message}` : ''}.
            </span>
          </Note>
          <p className="muted small">
            The machine&apos;s host sees it, without your name, and it counts in the machine&apos;s
            reliability. You can send one report about a machine a day.
          </p>
          <div className="row end">
            <Button variant="primary" onClick={onClose}>
              Done
            </Button>
          </div>
        </>
      ) : (
        <form onSubmit={submit} aria-label="Problem report">
          <SelectField
            label="Problem"
            value={problem}
            onChange={(e) => setProblem(e.target.value as ReportProblem)}
          >
            {REPORT_PROBLEMS.map((p) => (
              <option key={p} value={p}>
                {problemText(p)}
              </option>
            ))}
          </SelectField>
          <TextArea
            label="What happened"
            rows={4}
            maxLength={1000}
            value={message}
            onChange={(e) => setMessage(e.target.value)}
            hint="Plain text, at most 1000 characters. The host sees it, not who sent it."
          />
          <FormFooter error={error} busy={busy} onCancel={onClose}>
            Send report
          </FormFooter>
        </form>
      )}
    </Dialog>
  );
}

function LabelDialog(p: {
  open: boolean;
  current: string;
  busy: boolean;
  onClose: () => void;
  onSave: (label: string) => void;
}) {
  const [v, setV] = useState(p.current);
  const save = (e: FormEvent) => {
    e.preventDefault();
    p.onSave(v);
  };
  return (
    <Dialog title="Label" open={p.open} onClose={p.onClose}>
      <form onSubmit={save}>
        <Field label="Label" value={v} maxLength={1024} onChange={(e) => setV(e.target.value)} autoFocus />
        <FormFooter busy={p.busy} onCancel={p.onClose}>
          Save
        </FormFooter>
      </form>
    </Dialog>
  );
}

/** The env as lines of KEY=value, and the published container ports, as the update form shows them. */
function envLines(i: Instance): string {
  return (i.extra_env ?? []).map(([k, v]) => `${k}=${v}`).join('\n');
}
function portsText(i: Instance): string {
  return Object.keys(i.ports ?? {})
    .map((p) => p.split('/')[0]!)
    .filter((p) => p !== '22')
    .join(', ');
}

/**
 * Update instance (PUT /api/v0/instances/update_template/{id}/): the form starts from the
 * instance's configuration and sends only what was changed, plus the template picked, whose
 * values are the base of the fields not changed. The environment and the ports are one field of
 * the API (env replaces the whole env): changing either sends both.
 */
function UpdateDialog({ i, onClose }: { i: Instance; onClose: () => void }) {
  const refresh = useRefresh();
  const templates = useQuery({
    queryKey: ['templates'],
    queryFn: () => client.searchTemplates(),
  });
  const start = { image: i.image_uuid, env: envLines(i), ports: portsText(i), onstart: i.onstart ?? '' };
  const [f, setF] = useState({ ...start, template: '' });
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) =>
    setF({ ...f, [k]: e.target.value });
  const { busy, error, run } = useAction();
  const changed = (k: keyof typeof start) => f[k] !== start[k];
  const nothing = !f.template && !(['image', 'env', 'ports', 'onstart'] as const).some(changed);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await run(async () => {
      // Built a field at a time; the form is not sent with nothing to change (`nothing` above).
      const body: Partial<UpdateInstanceBody> = {};
      if (f.template) body.template_hash_id = f.template;
      if (changed('image')) body.image = f.image.trim();
      if (changed('onstart')) body.onstart = f.onstart;
      if (changed('env') || changed('ports')) body.env = envBody(f.env, f.ports);
      await client.updateInstance(i.id, body as UpdateInstanceBody);
      await refresh('instances');
      onClose();
    });
  };
  return (
    <Dialog title={`Update instance ${i.id}`} open onClose={onClose} wide>
      <form onSubmit={submit} className="stack" aria-label={`Update instance ${i.id}`}>
        <Note kind="warn">
          The host removes the container and creates a new one from this configuration:{' '}
          <strong>everything written on the instance&apos;s disk is lost.</strong> It keeps its id, machine,
          GPUs, price and SSH port.{' '}
          {stateOf(i) === 'stopped' ? 'A stopped instance runs it at its next start.' : ''}
        </Note>
        <SelectField label="Template" value={f.template} onChange={set('template')}>
          <option value="">None: the fields below</option>
          {(templates.data?.templates ?? []).map((t) => (
            <option key={t.hash_id} value={t.hash_id}>
              {t.name || t.hash_id} ({t.image}
              {t.tag ? `:${t.tag}` : ''})
            </option>
          ))}
        </SelectField>
        {f.template && (
          <p className="muted small">
            The template&apos;s image, environment and on-start script are used, except for the fields you
            change below.
          </p>
        )}
        <ErrorNote error={templates.error} />
        <Field label="Image" required value={f.image} onChange={set('image')} />
        <TextArea
          label="Environment"
          rows={3}
          className="mono"
          placeholder="KEY=value, one per line"
          value={f.env}
          onChange={set('env')}
          hint="Replaces the instance's whole environment when changed."
        />
        <Field label="Ports" placeholder="8080, 8888" value={f.ports} onChange={set('ports')} />
        <TextArea
          label="On-start script"
          rows={3}
          className="mono"
          value={f.onstart}
          onChange={set('onstart')}
        />
        <FormFooter error={error} busy={busy} variant="danger" disabled={nothing} onCancel={onClose}>
          Update and recreate
        </FormFooter>
      </form>
    </Dialog>
  );
}

/** The disk as allocated, and how much of it is used once the host has measured it. */
function diskText(i: Instance): string {
  if (typeof i.disk_usage !== 'number') return `${i.disk_space} GB disk`;
  const used = i.disk_usage < 10 ? i.disk_usage.toFixed(1) : String(Math.round(i.disk_usage));
  return `${used} of ${i.disk_space} GB disk used`;
}
