// Security: 2FA status and methods (GET /api/v0/tfa/status/). Adding a method first needs the
// add-method authorization (a code from an existing method, an e-mailed code for the first one, or
// a backup code), then TOTP (QR code drawn here from the provisioning URI, plus the manual key) or
// SMS is confirmed with a code. Removing a method and regenerating backup codes verify a factor
// in the same call. E-mail codes are always available once the e-mail is verified (never stored).
import { Fragment, useEffect, useRef, useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import QRCode from 'qrcode';
import { client } from '../api';
import type { TfaMethod, TfaStatus, TfaVerification } from '../../../src/contract/api-types';
import { Button, CopyButton, Dialog, ErrorNote, Field, LockCountdown, Note, download, when } from '../ui';
import { useAction, useActions, useRefresh } from '../components/actions';
import { FactorForm, type Choice, type FactorFormProps } from '../components/FactorForm';
import { FormFooter, OneTimeCodeField, SecretBox, SendCodeRow } from '../components/forms';
import { Table, TableCard } from '../components/Table';

type Factor = TfaVerification;

function choicesOf(methods: TfaMethod[], withEmail: boolean): Choice[] {
  const out: Choice[] = [...methods]
    .sort((a, b) => Number(b.is_primary) - Number(a.is_primary))
    .map((m) => ({
      kind: m.method,
      id: m.id,
      label:
        m.method === 'totp'
          ? `Authenticator app${m.label ? ` (${m.label})` : ''}`
          : `Text message to ${m.phone_number ?? 'your phone'}${m.label ? ` (${m.label})` : ''}`,
    }));
  if (withEmail) out.push({ kind: 'email', label: 'E-mail code' });
  if (methods.length > 0) out.push({ kind: 'backup', label: 'Backup code' });
  return out;
}

const methodName = (m: TfaMethod) => (m.method === 'totp' ? 'Authenticator app' : 'Text message (SMS)');

export function Security() {
  const status = useQuery({
    queryKey: ['tfa'],
    queryFn: () => client.tfaStatus(),
  });
  const [adding, setAdding] = useState<'totp' | 'sms' | null>(null);
  const [removing, setRemoving] = useState<TfaMethod | null>(null);
  const [editing, setEditing] = useState<TfaMethod | null>(null);
  const [regen, setRegen] = useState(false);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [disabling, setDisabling] = useState(false);

  const s = status.data;
  return (
    <>
      <ErrorNote error={status.error} />
      <section className="card" aria-labelledby="tfa-h">
        <div className="section-head">
          <h2 id="tfa-h">Two-factor authentication</h2>
          {s && (
            <span className={`status status-${s.tfa_enabled ? 'ok' : 'idle'}`} data-testid="tfa-state">
              <span className="dot" aria-hidden="true" />
              {s.tfa_enabled ? 'On' : 'Off'}
            </span>
          )}
        </div>
        {s && (
          <p className="muted">
            {s.tfa_enabled
              ? `Signing in asks for a second factor. ${s.backup_codes_remaining} unused backup code${s.backup_codes_remaining === 1 ? '' : 's'}.`
              : 'Signing in needs only your password. Add an authenticator app or a phone to protect the account.'}
            {s.new_method_authorized && ' Adding methods is authorized for the next 30 minutes.'}
          </p>
        )}
        <div className="row">
          <Button variant="primary" onClick={() => setAdding('totp')}>
            Add authenticator app
          </Button>
          <Button onClick={() => setAdding('sms')}>Add phone (SMS)</Button>
          {s?.tfa_enabled && <Button onClick={() => setRegen(true)}>New backup codes</Button>}
          {s?.tfa_enabled && (
            <Button variant="danger" onClick={() => setDisabling(true)}>
              Disable 2FA
            </Button>
          )}
        </div>
      </section>

      {s && s.methods.length > 0 && (
        <TableCard title="Methods" id="methods-h">
          <Table
            label="2FA methods"
            columns={['Method', 'Label', 'Added', 'Last used']}
            actions="Actions"
            rows={s.methods}
            row={(m) => (
              <tr key={m.id} data-method={m.method}>
                <td data-label="Method">
                  {methodName(m)}
                  {m.phone_number && <span className="muted"> {m.phone_number}</span>}
                  {m.is_primary && <span className="badge badge-info">primary</span>}
                  {m.locked_until && m.locked_until * 1000 > Date.now() && (
                    <span className="badge badge-bad">
                      <LockCountdown until={m.locked_until} />
                    </span>
                  )}
                </td>
                <td className="break-anywhere" data-label="Label">
                  {m.label || '—'}
                </td>
                <td data-label="Added">{when(m.created_at)}</td>
                <td data-label="Last used">{m.last_used ? when(m.last_used) : 'never'}</td>
                <td className="act">
                  <Button variant="ghost" onClick={() => setEditing(m)}>
                    Edit
                  </Button>
                  <Button variant="ghost" onClick={() => setRemoving(m)}>
                    Remove
                  </Button>
                </td>
              </tr>
            )}
          >
            <tr>
              <td data-label="Method">E-mail codes</td>
              <td colSpan={4} className="muted" data-label="">
                Always available to your verified e-mail address; nothing to set up.
              </td>
            </tr>
          </Table>
        </TableCard>
      )}

      {s && adding && (
        <AddMethod kind={adding} status={s} onClose={() => setAdding(null)} onCodes={(c) => setCodes(c)} />
      )}
      {s && removing && (
        <VerifyDialog
          title={`Remove ${methodName(removing).toLowerCase()}?`}
          intro={
            s.methods.length === 1
              ? 'This is your last method: removing it turns two-factor authentication off and voids your backup codes.'
              : 'Confirm with a second factor.'
          }
          status={s}
          action="Remove method"
          danger
          run={(f) => client.tfaDelete({ ...f, target_id: removing.id })}
          onClose={() => setRemoving(null)}
        />
      )}
      {s && disabling && (
        <VerifyDialog
          title="Disable two-factor authentication?"
          intro={
            s.methods.length > 1
              ? `You have ${s.methods.length} methods; remove all but one first (each removal is confirmed with a factor), then disable.`
              : 'Signing in will need only your password, and your backup codes stop working.'
          }
          status={s}
          action="Disable 2FA"
          danger
          disabled={s.methods.length > 1}
          run={(f) => client.tfaDelete({ ...f, ...(s.methods[0] ? { target_id: s.methods[0].id } : {}) })}
          onClose={() => setDisabling(false)}
        />
      )}
      {s && regen && (
        <VerifyDialog
          title="New backup codes"
          intro="Your current backup codes stop working and ten new ones are shown once."
          status={s}
          action="Make new codes"
          run={async (f) => {
            const r = await client.tfaRegenBackupCodes(f);
            setCodes(r.backup_codes);
          }}
          onClose={() => setRegen(false)}
        />
      )}
      {editing && <EditMethod m={editing} onClose={() => setEditing(null)} />}
      <BackupCodes codes={codes} onClose={() => setCodes(null)} />
    </>
  );
}

/** The verification fields of DELETE tfa/ and PUT regen-backup-codes/ for a choice. */
function factorOf(c: Choice, code: string, secret: string | null): Factor {
  if (c.kind === 'backup') return { backup_code: code };
  if (c.kind === 'email') return { tfa_method: 'email', code, secret: secret ?? undefined };
  return { tfa_method: c.kind, tfa_method_id: c.id, code, ...(secret ? { secret } : {}) };
}

async function sendVerifyCode(c: Choice): Promise<string> {
  if (c.kind === 'sms') return (await client.tfaSendSms({ tfa_method_id: c.id })).secret;
  return (await client.tfaSendEmail()).secret;
}

/** FactorForm as this tab shows it: a stack, and the same note for every code sent. */
function VerifyForm({
  send,
  ...rest
}: Omit<FactorFormProps, 'send' | 'name' | 'className'> & {
  send: (c: Choice) => Promise<string>;
}) {
  return (
    <FactorForm
      {...rest}
      name="factor"
      className="stack"
      send={async (c) => ({ secret: await send(c), note: 'Code sent.' })}
    />
  );
}

function VerifyDialog(p: {
  title: string;
  intro: string;
  status: TfaStatus;
  action: string;
  danger?: boolean;
  disabled?: boolean;
  run: (f: Factor) => Promise<unknown>;
  onClose: () => void;
}) {
  const refresh = useRefresh();
  return (
    <Dialog title={p.title} open onClose={p.onClose}>
      <p>{p.intro}</p>
      <VerifyForm
        choices={choicesOf(p.status.methods, true)}
        send={sendVerifyCode}
        action={p.action}
        danger={p.danger}
        disabled={p.disabled}
        submit={async (c, code, secret) => {
          await p.run(factorOf(c, code, secret));
          await refresh('tfa', 'me');
          p.onClose();
        }}
      />
    </Dialog>
  );
}

/** The add-method authorization: POST authorize-new-method (sends a code, or takes a backup code), then PUT with the code. */
function Authorize({ status, onDone }: { status: TfaStatus; onDone: () => void }) {
  const first = status.methods.length === 0;
  const choices = first
    ? [{ kind: 'email' as const, label: 'E-mail code' }]
    : choicesOf(status.methods, true);
  const start = async (c: Choice): Promise<string> => {
    // A backup code is sent with the confirmation, never asked for beforehand.
    const body: Factor =
      c.kind === 'email'
        ? first
          ? {}
          : { tfa_method: 'email' }
        : c.kind === 'backup'
          ? {}
          : { tfa_method: c.kind, tfa_method_id: 'id' in c ? c.id : undefined };
    return (await client.tfaAuthorizeNew(body)).secret ?? '';
  };
  return (
    <>
      <p>
        {first
          ? 'First, confirm it is you: we e-mail a code to your address.'
          : 'First, confirm it is you with one of your current methods.'}
      </p>
      <VerifyForm
        choices={choices}
        send={start}
        action="Authorize"
        submit={async (c, code, secret) => {
          if (c.kind === 'backup') {
            await client.tfaAuthorizeNew({ backup_code: code });
          } else {
            const s = secret ?? (await start(c));
            await client.tfaAuthorizeNewConfirm({ code, secret: s });
          }
          onDone();
        }}
      />
    </>
  );
}

function AddMethod({
  kind,
  status,
  onClose,
  onCodes,
}: {
  kind: 'totp' | 'sms';
  status: TfaStatus;
  onClose: () => void;
  onCodes: (c: string[]) => void;
}) {
  const refresh = useRefresh();
  const [authorized, setAuthorized] = useState(status.new_method_authorized);
  const finish = async (r: { backup_codes?: string[] }) => {
    await refresh('tfa', 'me');
    onClose();
    if (r.backup_codes?.length) onCodes(r.backup_codes);
  };
  return (
    <Dialog title={kind === 'totp' ? 'Add an authenticator app' : 'Add a phone'} open onClose={onClose} wide>
      {!authorized ? (
        <Authorize status={status} onDone={() => setAuthorized(true)} />
      ) : kind === 'totp' ? (
        <AddTotp onDone={finish} />
      ) : (
        <AddSms onDone={finish} />
      )}
    </Dialog>
  );
}

/** Confirms a new method with its first code; the label is sent when one is given. */
const confirmNew = (
  body: { tfa_method: 'sms' | 'totp'; code: string; secret: string | null; phone_number?: string },
  label: string,
) =>
  client.tfaConfirmNew({
    ...body,
    secret: body.secret ?? '',
    ...(label.trim() ? { label: label.trim() } : {}),
  });

function LabelField({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  return (
    <Field label="Label (optional)" maxLength={30} value={value} onChange={(e) => onChange(e.target.value)} />
  );
}

function AddTotp({ onDone }: { onDone: (r: { backup_codes?: string[] }) => Promise<void> }) {
  const setup = useQuery({
    queryKey: ['totp-setup'],
    queryFn: () => client.tfaTotpSetup(),
    staleTime: Infinity,
    gcTime: 0,
  });
  const canvas = useRef<HTMLCanvasElement>(null);
  const [code, setCode] = useState('');
  const [label, setLabel] = useState('');
  const { busy, error, run } = useAction();
  useEffect(() => {
    if (setup.data && canvas.current)
      void QRCode.toCanvas(canvas.current, setup.data.provisioning_uri, { width: 200, margin: 2 });
  }, [setup.data]);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const data = setup.data;
    if (!data) return;
    await run(async () => onDone(await confirmNew({ tfa_method: 'totp', code, secret: data.secret }, label)));
  };
  return (
    <form onSubmit={submit} className="totp">
      <ErrorNote error={setup.error} />
      <div className="totp-grid">
        <div className="qr-box">
          <canvas
            ref={canvas}
            width={200}
            height={200}
            aria-label="QR code for your authenticator app"
            role="img"
          />
        </div>
        <div className="stack">
          <p>Scan the code with your authenticator app, or type the key by hand:</p>
          <SecretBox testId="totp-secret" copy={setup.data?.secret} copyLabel="Copy key">
            {/* Groups of four that wrap between groups, never inside one. */}
            {setup.data
              ? (setup.data.secret.match(/.{1,4}/g) ?? []).map((g, k) => (
                  <Fragment key={k}>
                    {k > 0 && ' '}
                    <span className="key-group">{g}</span>
                  </Fragment>
                ))
              : '…'}
          </SecretBox>
          <LabelField value={label} onChange={setLabel} />
          <OneTimeCodeField label="Code from the app" value={code} onChange={setCode} />
        </div>
      </div>
      <FormFooter error={error} busy={busy} disabled={!setup.data}>
        Turn on
      </FormFooter>
    </form>
  );
}

function AddSms({ onDone }: { onDone: (r: { backup_codes?: string[] }) => Promise<void> }) {
  const [phone, setPhone] = useState('');
  const [label, setLabel] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [code, setCode] = useState('');
  const { busy, error, run } = useActions<'send' | 'go'>();
  const send = () =>
    run('send', async () => {
      const body = { phone_number: phone.trim() };
      setSecret((await (secret ? client.tfaResendSms(body) : client.tfaSendSms(body))).secret);
    });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await run('go', async () =>
      onDone(await confirmNew({ tfa_method: 'sms', code, secret, phone_number: phone.trim() }, label)),
    );
  };
  return (
    <form onSubmit={submit} className="stack">
      <Field
        label="Phone number"
        type="tel"
        placeholder="+14155550123"
        required
        value={phone}
        onChange={(e) => setPhone(e.target.value)}
        hint="In international format, starting with +."
      />
      <LabelField value={label} onChange={setLabel} />
      <SendCodeRow
        kind="sms"
        sent={secret ? 'Code sent.' : null}
        busy={busy === 'send'}
        disabled={!phone.trim()}
        onSend={send}
      />
      <OneTimeCodeField label="Code" value={code} onChange={setCode} />
      <FormFooter error={error} busy={busy === 'go'} disabled={!secret}>
        Add phone
      </FormFooter>
    </form>
  );
}

function EditMethod({ m, onClose }: { m: TfaMethod; onClose: () => void }) {
  const refresh = useRefresh();
  const [label, setLabel] = useState(m.label ?? '');
  const [primary, setPrimary] = useState(m.is_primary);
  const { busy, error, run } = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await run(async () => {
      await client.tfaUpdate({
        tfa_method_id: m.id,
        label: label.trim(),
        ...(primary && !m.is_primary ? { is_primary: true } : {}),
      });
      await refresh('tfa');
      onClose();
    });
  };
  return (
    <Dialog title={`Edit ${methodName(m).toLowerCase()}`} open onClose={onClose}>
      <form onSubmit={submit} className="stack">
        <Field label="Label" maxLength={30} value={label} onChange={(e) => setLabel(e.target.value)} />
        <label className="check">
          <input
            type="checkbox"
            checked={primary}
            disabled={m.is_primary}
            onChange={(e) => setPrimary(e.target.checked)}
          />
          Primary method (offered first when you sign in)
        </label>
        <FormFooter error={error} busy={busy} onCancel={onClose}>
          Save
        </FormFooter>
      </form>
    </Dialog>
  );
}

function BackupCodes({ codes, onClose }: { codes: string[] | null; onClose: () => void }) {
  const text = codes
    ? `openrig backup codes (${new Date().toISOString().slice(0, 10)})\nEach code works once.\n\n${codes.join('\n')}\n`
    : '';
  return (
    <Dialog title="Your backup codes" open={!!codes} onClose={onClose}>
      <Note kind="warn">Save them now: they are shown only this once. Each code signs you in once.</Note>
      <ol className="codes mono" data-testid="backup-codes">
        {codes?.map((c) => (
          <li key={c}>{c}</li>
        ))}
      </ol>
      <div className="row end">
        <CopyButton text={codes?.join('\n') ?? ''} label="Copy" />
        <Button onClick={() => download('openrig-backup-codes.txt', text)}>Download .txt</Button>
        <Button variant="primary" onClick={onClose}>
          I saved them
        </Button>
      </div>
    </Dialog>
  );
}
