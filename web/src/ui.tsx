// Small building blocks shared by the pages: links, buttons with progress, error notes, dialogs,
// copy buttons, labelled fields, and formatters.
import {
  useEffect,
  useId,
  useRef,
  useState,
  useSyncExternalStore,
  type ReactNode,
  type ButtonHTMLAttributes,
  type InputHTMLAttributes,
  type SelectHTMLAttributes,
  type TextareaHTMLAttributes,
} from 'react';
import { ApiError, errorText } from './api';

// --- routing: the History API, no library -------------------------------------------------

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

export function usePath(): string {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => location.pathname,
  );
}

export function Link(props: {
  to: string;
  children: ReactNode;
  className?: string;
  current?: boolean;
  /** An accessible name when the text alone does not say where it goes. */
  label?: string;
}) {
  return (
    <a
      href={props.to}
      className={props.className}
      aria-label={props.label}
      aria-current={props.current ? 'page' : undefined}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

// --- controls ------------------------------------------------------------------------------

export function Button({
  busy,
  variant = 'default',
  children,
  ...rest
}: ButtonHTMLAttributes<HTMLButtonElement> & {
  busy?: boolean;
  variant?: 'default' | 'primary' | 'danger' | 'ghost';
}) {
  return (
    <button
      type="button"
      {...rest}
      className={`btn btn-${variant} ${rest.className ?? ''}`}
      disabled={rest.disabled || busy}
      aria-busy={busy || undefined}
    >
      {busy && <span className="spinner" aria-hidden="true" />}
      <span>{children}</span>
    </button>
  );
}

export function ErrorNote({ error, children }: { error: unknown; children?: ReactNode }) {
  if (!error) return null;
  const body = error instanceof ApiError ? (error.body as { locked_until?: unknown } | undefined) : undefined;
  const locked = typeof body?.locked_until === 'number' ? body.locked_until : null;
  return (
    <div className="note note-error" role="alert">
      <strong>{errorText(error)}</strong>
      {locked ? <LockCountdown until={locked} /> : null}
      {children}
    </div>
  );
}

export function Note({ children, kind = 'info' }: { children: ReactNode; kind?: 'info' | 'ok' | 'warn' }) {
  return (
    <div className={`note note-${kind}`} role="status">
      {children}
    </div>
  );
}

export function LockCountdown({ until }: { until: number }) {
  const now = useNow(1000);
  const left = Math.max(0, Math.round(until - now / 1000));
  if (left === 0) return <span className="lock"> The lock has ended; try again.</span>;
  return <span className="lock"> Locked for {duration(left)} more.</span>;
}

export function useNow(stepMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), stepMs);
    return () => clearInterval(t);
  }, [stepMs]);
  return now;
}

export function Field({
  label,
  hint,
  ...rest
}: InputHTMLAttributes<HTMLInputElement> & { label: string; hint?: ReactNode }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={rest.id ?? id}>{label}</label>
      <input id={rest.id ?? id} {...rest} aria-describedby={hint ? `${id}-hint` : undefined} />
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

export function SelectField({
  label,
  children,
  ...rest
}: SelectHTMLAttributes<HTMLSelectElement> & { label: string; children: ReactNode }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} {...rest}>
        {children}
      </select>
    </div>
  );
}

export function TextArea({
  label,
  hint,
  ...rest
}: TextareaHTMLAttributes<HTMLTextAreaElement> & { label: string; hint?: ReactNode }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea id={id} {...rest} />
      {hint && <small className="hint">{hint}</small>}
    </div>
  );
}

/** A modal dialog (the native element: focus stays inside, Escape closes it). */
export function Dialog({
  title,
  open,
  onClose,
  children,
  wide,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ReactNode;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className={`dialog ${wide ? 'dialog-wide' : ''}`}
      aria-labelledby={titleId}
      onClose={onClose}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      {open && (
        <>
          <header className="dialog-head">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="icon-btn" aria-label="Close" onClick={onClose}>
              ×
            </button>
          </header>
          <div className="dialog-body">{children}</div>
        </>
      )}
    </dialog>
  );
}

export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const t = document.createElement('textarea');
    t.value = text;
    document.body.appendChild(t);
    t.select();
    document.execCommand('copy');
    t.remove();
  }
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <Button
      variant="ghost"
      className="copy-btn"
      onClick={async () => {
        await copyText(text);
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      <span aria-live="polite">{done ? 'Copied' : label}</span>
    </Button>
  );
}

export function download(filename: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export function PageHead({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="page-head">
      <h1>{title}</h1>
      {children && <div className="page-actions">{children}</div>}
    </div>
  );
}

// --- formatting ----------------------------------------------------------------------------

export const usd = (n: number | null | undefined, digits = 3): string =>
  n === null || n === undefined ? '—' : `$${n.toFixed(digits)}`;

export const gb = (mb: number): string => `${Math.round(mb / 1024)} GB`;

/**
 * The fewest whole MB that `gb` shows as `gbMin` GB or more, so that a filter at least this many MB
 * keeps exactly what is shown with at least `gbMin` GB (it rounds to the nearest GB, halves up).
 */
export const leastMbShownAs = (gbMin: number): number => Math.ceil(gbMin) * 1024 - 512;

export function when(epochS: number | null | undefined): string {
  if (!epochS) return '—';
  return new Date(epochS * 1000).toLocaleString(undefined, {
    dateStyle: 'medium',
    timeStyle: 'short',
  });
}

/** "2026-11-27 12:01:33 UTC": a time to the second in UTC, as the CLI's tables show it. */
export function utc(epochS: number | null | undefined): string {
  if (!epochS) return '—';
  return `${new Date(epochS * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function duration(s: number): string {
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const r = s % 60;
  if (m < 60) return `${m}:${String(r).padStart(2, '0')} min`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}
