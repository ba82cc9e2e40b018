// Account: API keys (create with scopes, shown once, revoke, last used), SSH keys, and the tabs of
// their own pages: environment variables, settings, billing, security (2FA and activity).
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import type { ApiKeyRow as ApiKey, SshKeyRow as SshKey } from '../../../src/client/client';
import { Button, Dialog, ErrorNote, Field, Link, Note, PageHead, TextArea, when } from '../ui';
import { useAction, useActions, useRefresh } from '../components/actions';
import { FormFooter, SecretBox } from '../components/forms';
import { Table, TableCard } from '../components/Table';
import { Security } from './Security';
import { Activity } from './Activity';
import { Billing } from './Billing';
import { EnvVars } from './EnvVars';
import { Settings } from './Settings';
import { PasswordChange } from '../components/PasswordChange';

const TABS = [
  { to: '/account', label: 'API keys' },
  { to: '/account/ssh', label: 'SSH keys' },
  { to: '/account/env', label: 'Environment' },
  { to: '/account/settings', label: 'Settings' },
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
      {tab.to === '/account/env' && <EnvVars />}
      {tab.to === '/account/settings' && <Settings />}
      {tab.to === '/account/billing' && <Billing />}
      {tab.to === '/account/security' && (
        <>
          <PasswordChange />
          <Security />
          <Activity />
        </>
      )}
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

function scopeText(p: ApiKey['permissions']): string {
  if (p === 'full' || p === null || p === undefined) return 'Full access';
  if (p === 'read_only') return 'Read only';
  return Object.entries(p)
    .map(([f, a]) => `${f}: ${a}`)
    .join(', ');
}

function ApiKeys() {
  const refresh = useRefresh();
  const keys = useQuery({
    queryKey: ['apikeys'],
    queryFn: () => client.listApiKeys(),
  });
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'full' | 'read_only' | 'custom'>('full');
  const [custom, setCustom] = useState<Record<string, '' | 'read' | 'write'>>({});
  const { busy, error, run } = useAction();
  const [created, setCreated] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);

  async function create(e: FormEvent) {
    e.preventDefault();
    await run(async () => {
      const permissions =
        mode === 'custom' ? Object.fromEntries(Object.entries(custom).filter(([, v]) => v)) : mode;
      const r = await client.createApiKey(name.trim() || undefined, permissions);
      setCreated(r.key ?? null);
      setName('');
      await refresh('apikeys');
    });
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
          <FormFooter error={error} busy={busy} place="start">
            Create key
          </FormFooter>
        </form>
      </section>
      <TableCard title="API keys" id="keys-h">
        <ErrorNote error={keys.error} />
        <Table
          label="API keys"
          columns={['Name', 'Key', 'Permissions', 'Created', 'Last used']}
          actions="Revoke"
          rows={keys.data}
          empty="No API keys."
          row={(k) => (
            <tr key={k.id} data-key={k.id}>
              <td className="break-anywhere" data-label="Name">
                {k.name || '—'}
              </td>
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
          )}
        />
      </TableCard>
      <Dialog title="Your new API key" open={!!created} onClose={() => setCreated(null)}>
        <Note kind="warn">Copy it now: it is shown only this once.</Note>
        <SecretBox testId="new-key" copy={created}>
          {created}
        </SecretBox>
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
  const refresh = useRefresh();
  const { busy, error, run } = useAction();
  return (
    <Dialog title="Revoke this key?" open={!!k} onClose={onClose}>
      {k && (
        <>
          <p>
            <strong>{k.name || k.key_prefix}</strong> stops working at once for every program that uses it. If
            this console signed in with it, you stay signed in.
          </p>
          <FormFooter
            error={error}
            busy={busy}
            variant="danger"
            onCancel={onClose}
            onConfirm={() =>
              run(async () => {
                await client.deleteApiKey(k.id);
                await refresh('apikeys');
                onClose();
              })
            }
          >
            Revoke key
          </FormFooter>
        </>
      )}
    </Dialog>
  );
}

// --- SSH keys --------------------------------------------------------------------------------

function SshKeys() {
  const refresh = useRefresh();
  const keys = useQuery({
    queryKey: ['sshkeys'],
    queryFn: () => client.listSshKeys(),
  });
  const [text, setText] = useState('');
  const { busy, error, run } = useActions<string>();
  const add = async (e: FormEvent) => {
    e.preventDefault();
    await run('add', async () => {
      await client.addSshKey(text.trim());
      setText('');
      await refresh('sshkeys');
    });
  };
  const remove = (k: SshKey) =>
    run(`rm-${k.id}`, async () => {
      await client.deleteSshKey(k.id);
      await refresh('sshkeys');
    });
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
          <FormFooter error={error} busy={busy === 'add'} place="start">
            Add key
          </FormFooter>
        </form>
      </section>
      <TableCard title="SSH keys">
        <ErrorNote error={keys.error} />
        <Table
          label="SSH keys"
          columns={['Type', 'Fingerprint', 'Comment', 'Added']}
          actions="Remove"
          rows={keys.data}
          empty="No SSH keys yet: add one before renting."
          row={(k) => (
            <tr key={k.id}>
              <td data-label="Type">{k.key_type}</td>
              <td data-label="Fingerprint" className="mono small break-anywhere">
                {k.fingerprint}
              </td>
              <td className="break-anywhere" data-label="Comment">
                {k.comment || '—'}
              </td>
              <td data-label="Added">{when(k.created_at)}</td>
              <td className="act">
                <Button variant="ghost" busy={busy === `rm-${k.id}`} onClick={() => remove(k)}>
                  Remove
                </Button>
              </td>
            </tr>
          )}
        />
      </TableCard>
    </>
  );
}
