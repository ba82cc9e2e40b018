// The volumes module's e-mails (pure): subject, plain text and HTML. Times are shown in UTC.
// A volume's label is the renter's own text: it appears quoted as a JSON string, cut to 64
// characters, never in the subject.
import { escapeHtml, utc, type Rendered } from '../notifications/notifications.format.js';

/** To a volume's owner whose balance is exhausted: the volume is kept, and until when. */
export function volumeUnpaidEmail(p: {
  volumeId: number;
  label: string;
  keptUntil: number;
  graceDays: number;
}): Rendered {
  const subject = `Volume ${p.volumeId}: your balance is exhausted; it is kept until ${utc(p.keptUntil)}`;
  const name = p.label ? ` (labelled ${JSON.stringify(p.label.slice(0, 64))})` : '';
  const lines = [
    'Hello,',
    '',
    `Your account's balance is exhausted while your volume ${p.volumeId}${name} exists.`,
    `openrig keeps the volume and its data for ${p.graceDays} days, until ${utc(p.keptUntil)}, and keeps charging its storage.`,
    'Add credit to keep it beyond that; after it the operator may delete it. openrig never deletes it by itself.',
    '',
    'To keep nothing, delete it: vastai delete volume ID, or openrig volumes delete ID.',
  ];
  const text = lines.join('\n');
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head><body style="font-family:sans-serif">${lines
    .filter((l) => l !== '')
    .map((l) => `<p>${escapeHtml(l)}</p>`)
    .join('')}</body></html>`;
  return { subject, text, html };
}
