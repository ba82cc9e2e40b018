// Pieces of forms and dialogs that several pages show alike.
import type { ReactNode } from 'react';
import { Button, CopyButton, ErrorNote, Field, Note } from '../ui';

/**
 * The end of a form or dialog: the error of its last request, then a ghost button that backs out
 * (when `onCancel` is given) and the main button, which submits the form unless `onConfirm` is given.
 */
export function FormFooter({
  error,
  busy,
  disabled,
  variant = 'primary',
  onConfirm,
  onCancel,
  cancel = 'Cancel',
  place = 'end',
  children,
}: {
  error?: unknown;
  busy?: boolean;
  disabled?: boolean;
  variant?: 'primary' | 'danger';
  onConfirm?: () => void;
  onCancel?: () => void;
  cancel?: string;
  /** Where the buttons sit: at the end of the row (dialogs) or its start (forms on a page). */
  place?: 'start' | 'end';
  children: ReactNode;
}) {
  return (
    <>
      <ErrorNote error={error} />
      <div className={place === 'end' ? 'row end' : 'row'}>
        {onCancel && (
          <Button variant="ghost" onClick={onCancel}>
            {cancel}
          </Button>
        )}
        <Button
          type={onConfirm ? 'button' : 'submit'}
          variant={variant}
          busy={busy}
          disabled={disabled}
          onClick={onConfirm}
        >
          {children}
        </Button>
      </div>
    </>
  );
}

/** A six-digit code: digits only, offered to the browser's one-time-code autofill. */
export function OneTimeCodeField({
  label,
  value,
  onChange,
}: {
  label: string;
  value: string;
  onChange: (digits: string) => void;
}) {
  return (
    <Field
      label={label}
      inputMode="numeric"
      autoComplete="one-time-code"
      pattern="[0-9]{6}"
      maxLength={6}
      required
      value={value}
      onChange={(e) => onChange(e.target.value.replace(/\D/g, ''))}
    />
  );
}

/** The button that has a code sent by SMS or e-mail, and once sent, the note that says so. */
export function SendCodeRow({
  kind,
  sent,
  busy,
  disabled,
  onSend,
}: {
  kind: 'sms' | 'email';
  /** The note shown once a code is sent; null before. */
  sent: string | null;
  busy: boolean;
  disabled?: boolean;
  onSend: () => void;
}) {
  return (
    <div className="row">
      <Button busy={busy} onClick={onSend} disabled={disabled}>
        {sent ? 'Send again' : kind === 'sms' ? 'Text me a code' : 'E-mail me a code'}
      </Button>
      {sent && <Note kind="ok">{sent}</Note>}
    </div>
  );
}

/** A secret shown in full (once), with a button that copies `copy` when there is one. */
export function SecretBox({
  testId,
  copy,
  copyLabel,
  children,
}: {
  testId: string;
  copy?: string | null;
  copyLabel?: string;
  children: ReactNode;
}) {
  return (
    <div className="secret-box">
      <code className="mono" data-testid={testId}>
        {children}
      </code>
      {copy && <CopyButton text={copy} label={copyLabel} />}
    </div>
  );
}

/**
 * The `env` of a create or update body from a form's Environment and Ports fields: its KEY=value
 * lines (other lines are skipped), and each port as the `-p P:P` request that publishes it.
 */
export function envBody(lines: string, ports: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of lines.split('\n')) {
    const m = /^\s*([^=\s]+)\s*=(.*)$/.exec(line);
    if (m) env[m[1]!] = m[2]!.trim();
  }
  for (const p of ports.split(/[\s,]+/).filter(Boolean)) env[`-p ${p}:${p}`] = '1';
  return env;
}
