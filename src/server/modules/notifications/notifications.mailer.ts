// The mailer seam, so tests see exactly what is sent: one method, `send`, behind which sit the
// two deliveries (configured as in .env.example):
// - `SMTP_URL=smtp://user:pass@host:port`: a real e-mail over SMTP (nodemailer), with a text and
//   an HTML part, `Date`, a `Message-ID` derived from the outbox idempotency key (a receiver can
//   drop a repeat after a crash between "sent" and "marked sent"), and `From` from config;
// - `OPENRIG_MAIL_OUTBOX=FILE` (also, or alone; default `DATA/mail-outbox.jsonl` when neither is
//   set): one JSON line `{"at", "to", "subject", "text"}` appended per e-mail.
// SMTP goes first: if it fails nothing is written to the file and the relay retries the whole
// e-mail; a file failure after an SMTP success repeats the SMTP send with the same Message-ID.
import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type Nodemailer from 'nodemailer';
import type { Config } from '../../config.js';
import { sha256Hex } from '../../crypto.js';
import { escapeHtml } from './notifications.format.js';
import { lazyRequire } from '../../../contract/lazy-require.js';

// Loaded when an SMTP_URL is configured, not at start-up (about 80 ms of `serve`'s ready time).
const nodemailer = lazyRequire<typeof Nodemailer>('nodemailer');

export interface OutgoingEmail {
  /** The outbox idempotency key; the Message-ID is derived from it. */
  key: string;
  to: string;
  subject: string;
  text: string;
  html: string | null;
  /** When the e-mail is handed over (the `Date` header and the outbox line's `at`). */
  date: Date;
}

export interface Mailer {
  send(mail: OutgoingEmail): Promise<void>;
  close(): Promise<void>;
}

/** The domain part of the From address (for Message-IDs), `openrig.local` when there is none. */
export function fromDomain(from: string): string {
  const m = /@([^\s>]+)>?\s*$/.exec(from);
  return m ? m[1]!.toLowerCase() : 'openrig.local';
}

/** RFC 5322 Message-ID, stable for one idempotency key: a retried send carries the same id. */
export function messageIdFor(key: string, from: string): string {
  return `<${sha256Hex(`openrig-mail:${key}`).slice(0, 40)}@${fromDomain(from)}>`;
}

/** The outbox file line, exactly these four fields (a format scripts rely on). */
export function outboxLine(mail: Pick<OutgoingEmail, 'to' | 'subject' | 'text' | 'date'>): string {
  return (
    JSON.stringify({ at: mail.date.toISOString(), to: mail.to, subject: mail.subject, text: mail.text }) +
    '\n'
  );
}

/** The HTML part of an e-mail queued with text only (every e-mail goes out with both parts). */
export function textToHtml(text: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"></head><body><pre style="font-family:sans-serif;white-space:pre-wrap">${escapeHtml(text)}</pre></body></html>`;
}

/** Removes the password of an `smtp://user:pass@host` URL from an error message before logging it. */
export function redactSmtp(message: string, smtpUrl: string | null): string {
  let out = message.replace(/(smtps?:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1[redacted]@');
  if (smtpUrl) {
    try {
      const pass = decodeURIComponent(new URL(smtpUrl).password);
      if (pass) out = out.split(pass).join('[redacted]');
    } catch {
      // not a URL: nothing more to redact
    }
  }
  return out;
}

export function createMailer(mail: Config['mail']): Mailer {
  // Pooled connections (the relay sends a few at a time); timeouts below the relay's lease, so a
  // stalled server can't keep a leased e-mail past its lease (which would let another relay send it).
  // Query parameters of SMTP_URL (e.g. ?pool=false&secure=true) override these.
  const transport = mail.smtpUrl
    ? nodemailer().createTransport({
        url: mail.smtpUrl,
        pool: true,
        maxConnections: 4,
        connectionTimeout: 30_000,
        greetingTimeout: 30_000,
        socketTimeout: 60_000,
      })
    : null;
  let dirReady: Promise<unknown> | null = null;
  return {
    async send(m) {
      if (transport) {
        await transport.sendMail({
          from: mail.from,
          to: m.to,
          subject: m.subject,
          text: m.text,
          html: m.html ?? textToHtml(m.text),
          date: m.date,
          messageId: messageIdFor(m.key, mail.from),
        });
      }
      if (mail.outboxFile) {
        const file = mail.outboxFile;
        dirReady ??= mkdir(path.dirname(file), { recursive: true });
        await dirReady;
        // One write(2) with O_APPEND per line: lines of several processes never interleave.
        await appendFile(file, outboxLine(m), { encoding: 'utf8', mode: 0o600 });
      }
    },
    async close() {
      transport?.close();
    },
  };
}
