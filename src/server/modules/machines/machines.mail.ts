// The machines module's e-mails (pure): subject, plain text and HTML of each e-mail sent to a
// host about one of its machines. Times are shown in UTC. Host-supplied names (the GPU model,
// the host name) appear only quoted as JSON strings under a heading that says the host supplied
// them, never in the subject or the service's sentences.
import { escapeHtml, utc, type Rendered } from '../notifications/notifications.format.js';

const quoted = (v: string) => JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v);

/** To the host: its machine's verification changed (docs/trust.md), with the reason. */
export function verificationChangedEmail(p: {
  machine: { id: number; gpu_name: string; num_gpus: number; hostname: string };
  from: string;
  to: string;
  reason: string;
  at: number;
  name: string;
  rule: string;
}): Rendered {
  const { machine: m } = p;
  const subject = `Machine ${m.id} is now ${p.to}`;
  const greeting = p.name ? `Hello ${p.name},` : 'Hello,';
  const next =
    p.to === 'verified'
      ? "Renters' default searches now show it."
      : `Renters' default searches hide it until it is verified again: ${p.rule}.`;
  const text = [
    greeting,
    '',
    `The verification of your machine ${m.id} changed from ${p.from} to ${p.to} at ${utc(p.at)}.`,
    `Reason: ${p.reason}`,
    next,
    '',
    '  As named by the host (not checked by openrig):',
    `    GPU: ${m.num_gpus}x ${quoted(m.gpu_name)}`,
    ...(m.hostname ? [`    Host name: ${quoted(m.hostname)}`] : []),
    '',
    "The history of its verification is on the machine's page of the console (GET /api/v0/machines/ID/verification).",
  ].join('\n');
  const html =
    `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head><body style="font-family:sans-serif">` +
    `<p>${escapeHtml(greeting)}</p>` +
    `<p>The verification of your machine ${m.id} changed from <b>${escapeHtml(p.from)}</b> to <b>${escapeHtml(p.to)}</b> at ${escapeHtml(utc(p.at))}.</p>` +
    `<p>Reason: ${escapeHtml(p.reason)}</p><p>${escapeHtml(next)}</p>` +
    `<p>As named by the host (not checked by openrig):</p><table><tr><th align="left">GPU</th><td><code>${escapeHtml(`${m.num_gpus}x ${quoted(m.gpu_name)}`)}</code></td></tr>` +
    (m.hostname
      ? `<tr><th align="left">Host name</th><td><code>${escapeHtml(quoted(m.hostname))}</code></td></tr>`
      : '') +
    '</table></body></html>';
  return { subject, text, html };
}
