// The e-mails of the 2FA module, through the transactional outbox (call inside the transaction
// that makes the change). Every code appears in the text as six digits, which is what scripts
// and tests read from the outbox.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { enqueueEmails } from '../notifications/notifications.outbox.js';
import { assertNever } from '../../errors.js';

export type TfaNotice =
  | { kind: 'method_added'; method: string; label: string }
  | { kind: 'method_removed'; method: string; label: string; disabled: boolean }
  | { kind: 'backup_regenerated' }
  | { kind: 'method_locked'; method: string; label: string; untilMs: number }
  | { kind: 'tfa_disabled' };

function describe(method: string, label: string): string {
  const name = method === 'totp' ? 'authenticator app (TOTP)' : method === 'sms' ? 'SMS' : method;
  return label ? `${name} "${label}"` : name;
}

export function noticeText(n: TfaNotice): { subject: string; text: string } {
  const tail = '\n\nIf this was not you, change your password and review your 2FA methods now.';
  switch (n.kind) {
    case 'method_added':
      return {
        subject: 'A 2FA method was added to your openrig account',
        text: `The 2FA method ${describe(n.method, n.label)} was added to your account.${tail}`,
      };
    case 'method_removed':
      return {
        subject: 'A 2FA method was removed from your openrig account',
        text: `The 2FA method ${describe(n.method, n.label)} was removed from your account.${n.disabled ? ' It was the last one: two-factor authentication is now disabled and your backup codes no longer work.' : ''}${tail}`,
      };
    case 'backup_regenerated':
      return {
        subject: 'Your openrig backup codes were regenerated',
        text: `A new set of 2FA backup codes was generated; the previous codes no longer work.${tail}`,
      };
    case 'method_locked':
      return {
        subject: 'A 2FA method on your openrig account is locked',
        text: `Too many wrong codes were entered for the 2FA method ${describe(n.method, n.label)}. It is locked until ${new Date(n.untilMs).toISOString()}; other methods keep working.${tail}`,
      };
    case 'tfa_disabled':
      return {
        subject: 'Two-factor authentication was disabled on your openrig account',
        text: `Two-factor authentication was disabled on your account.${tail}`,
      };
    default:
      return assertNever(n, 'notice');
  }
}

export async function enqueueNotice(
  db: Kysely<DB>,
  now: number,
  to: string,
  key: string,
  n: TfaNotice,
): Promise<void> {
  const { subject, text } = noticeText(n);
  await enqueueEmails(db, now, [
    { key: `tfa:${n.kind}:${key}`, to, subject, text, category: `tfa.${n.kind}` },
  ]);
}

export async function enqueueCode(
  db: Kysely<DB>,
  now: number,
  to: string,
  key: string,
  code: string,
  ttlS: number,
): Promise<void> {
  await enqueueEmails(db, now, [
    {
      key: `tfa:code:${key}`,
      to,
      subject: `Your openrig verification code: ${code}`,
      text: `Your openrig verification code is ${code}.\n\nIt expires in ${Math.round(ttlS / 60)} minutes. Never share it; openrig staff will never ask for it.`,
      category: 'tfa.code',
    },
  ]);
}
