// The second-factor form of the sign-in page and of the Security tab: pick a method, have a code
// sent where one is sent (SMS, e-mail), type the code (or a backup code) and submit.
import { useState, type FormEvent } from 'react';
import { Field } from '../ui';
import { useActions } from './actions';
import { FormFooter, OneTimeCodeField, SendCodeRow } from './forms';

/** A way to verify; a text message without an `id` goes to the account's number on file. */
export type Choice =
  | { kind: 'totp'; id: number; label: string }
  | { kind: 'sms'; id?: number; label: string }
  | { kind: 'email'; label: string }
  | { kind: 'backup'; label: string };

export interface FactorFormProps {
  choices: Choice[];
  /** The name of the group of method buttons. */
  name: string;
  /** Has a code sent (`again` once one was); answers its secret and the note to show. */
  send: (c: Choice, again: boolean) => Promise<{ secret: string; note: string }>;
  /** Verifies the code typed (trimmed) with the secret of the code sent, if one was. */
  submit: (c: Choice, code: string, secret: string | null) => Promise<void>;
  action: string;
  danger?: boolean;
  disabled?: boolean;
  /** The form's heading and name. */
  title?: string;
  className?: string;
  /** Shows a Back button beside the main one. */
  onBack?: () => void;
}

export function FactorForm({
  choices,
  name,
  send,
  submit,
  action,
  danger,
  disabled,
  title,
  className,
  onBack,
}: FactorFormProps) {
  const [idx, setIdx] = useState(0);
  const c = choices[idx];
  const [code, setCode] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);
  const { busy, error, setError, run } = useActions<'send' | 'go'>();
  if (!c) return null;
  const sends = c.kind === 'sms' || c.kind === 'email' ? c.kind : null;

  const pick = (i: number) => {
    setIdx(i);
    setCode('');
    setSecret(null);
    setSent(null);
    setError(null);
  };
  const doSend = () =>
    run('send', async () => {
      const r = await send(c, sent !== null);
      setSecret(r.secret);
      setSent(r.note);
    });
  const go = async (e: FormEvent) => {
    e.preventDefault();
    await run('go', () => submit(c, code.trim(), secret));
  };
  return (
    <form onSubmit={go} className={className} aria-label={title}>
      {title && <h2>{title}</h2>}
      {choices.length > 1 ? (
        <fieldset className="choices">
          <legend>Verify with</legend>
          {choices.map((ch, i) => (
            <label key={`${ch.kind}-${'id' in ch ? ch.id : ''}`} className="choice">
              <input type="radio" name={name} checked={i === idx} onChange={() => pick(i)} />
              <span>{ch.label}</span>
            </label>
          ))}
        </fieldset>
      ) : (
        <p className="muted">Verify with: {c.label}</p>
      )}
      {sends && <SendCodeRow kind={sends} sent={sent} busy={busy === 'send'} onSend={doSend} />}
      {c.kind === 'backup' ? (
        <Field
          label="Backup code"
          placeholder="XXXX-XXXX-XXXX"
          autoComplete="off"
          required
          value={code}
          onChange={(e) => setCode(e.target.value)}
        />
      ) : (
        <OneTimeCodeField
          label={c.kind === 'totp' ? 'Code from your authenticator app' : 'Code'}
          value={code}
          onChange={setCode}
        />
      )}
      <FormFooter
        error={error}
        busy={busy === 'go'}
        variant={danger ? 'danger' : 'primary'}
        disabled={disabled || (!!sends && !secret)}
        onCancel={onBack}
        cancel="Back"
        place={onBack ? 'start' : 'end'}
      >
        {action}
      </FormFooter>
    </form>
  );
}
