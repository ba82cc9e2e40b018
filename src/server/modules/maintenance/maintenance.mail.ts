// The maintenance module's e-mails (pure): subject, plain text and HTML of each e-mail the service
// sends about maintenance. Times are always shown in UTC.
//
// Text a host supplied (its machines' GPU and host names) appears only in marked fields, under a
// heading that says the host supplied it, quoted as a JSON string (so no character of it can
// start a line or pass for the service's own words) and cut to 100 characters; never in the
// subject or the service's sentences. The API refuses control characters in such names anyway.
import { escapeHtml, hours, utc, type Rendered } from '../notifications/notifications.format.js';

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body style="font-family:sans-serif">${body}</body></html>`;
}

export interface MachineInfo {
  id: number;
  gpu_name: string;
  num_gpus: number;
  hostname: string;
}

export interface WindowInfo {
  start: number;
  end: number;
  durationHours: number;
  category: string;
}

/** A host-supplied value as shown in an e-mail: a JSON string of at most 100 characters. */
export function hostValue(v: string): string {
  const cut = v.length > 100 ? `${v.slice(0, 100)}…` : v;
  return JSON.stringify(cut);
}

/** The marked fields of a machine's host-supplied names (text lines and HTML rows). */
function hostFields(m: MachineInfo): { text: string[]; html: string } {
  const rows: [string, string][] = [['GPU', `${m.num_gpus}x ${hostValue(m.gpu_name)}`]];
  if (m.hostname) rows.push(['Host name', hostValue(m.hostname)]);
  return {
    text: ['  As named by the host (not checked by openrig):', ...rows.map(([k, v]) => `    ${k}: ${v}`)],
    html:
      '<p>As named by the host (not checked by openrig):</p><table>' +
      rows
        .map(([k, v]) => `<tr><th align="left">${k}</th><td><code>${escapeHtml(v)}</code></td></tr>`)
        .join('') +
      '</table>',
  };
}

/** To a client with running or stopped instances on the machine: one per client per window. */
export function maintenanceClientEmail(p: {
  machine: MachineInfo;
  window: WindowInfo;
  instanceIds: number[];
  name: string;
}): Rendered {
  const { machine, window: w } = p;
  const host = hostFields(machine);
  const subject = `Scheduled maintenance on machine ${machine.id}: ${utc(w.start)} to ${utc(w.end)} (${w.category})`;
  const ids = p.instanceIds.join(', ');
  const greeting = p.name ? `Hello ${p.name},` : 'Hello,';
  const text = [
    greeting,
    '',
    `The host of machine ${machine.id} has scheduled a maintenance window:`,
    '',
    `  Machine:  ${machine.id}`,
    `  Start:    ${utc(w.start)}`,
    `  End:      ${utc(w.end)}`,
    `  Duration: ${hours(w.durationHours)}`,
    `  Category: ${w.category}`,
    '',
    ...host.text,
    '',
    `Your instance${p.instanceIds.length === 1 ? '' : 's'} on this machine: ${ids}.`,
    'They may be stopped or unreachable during the window. Save your work beforehand, or move it to',
    'another machine.',
    '',
    '-- openrig',
  ].join('\n');
  const html = page(
    subject,
    `<p>${escapeHtml(greeting)}</p>` +
      `<p>The host of machine ${machine.id} has scheduled a maintenance window:</p>` +
      '<table>' +
      `<tr><th align="left">Machine</th><td>${machine.id}</td></tr>` +
      `<tr><th align="left">Start</th><td>${escapeHtml(utc(w.start))}</td></tr>` +
      `<tr><th align="left">End</th><td>${escapeHtml(utc(w.end))}</td></tr>` +
      `<tr><th align="left">Duration</th><td>${escapeHtml(hours(w.durationHours))}</td></tr>` +
      `<tr><th align="left">Category</th><td>${escapeHtml(w.category)}</td></tr>` +
      '</table>' +
      host.html +
      `<p>Your instance${p.instanceIds.length === 1 ? '' : 's'} on this machine: ${escapeHtml(ids)}.</p>` +
      '<p>They may be stopped or unreachable during the window. Save your work beforehand, or move it to another machine.</p>' +
      '<p>-- openrig</p>',
  );
  return { subject, text, html };
}

export interface ScheduledLine {
  machineId: number;
  start: number;
  end: number;
  notificationsSent: number;
}

export interface FailedLine {
  /** As submitted (an invalid entry may not be a number). */
  machineId: unknown;
  error: string;
  msg: string;
}

/** To the host: exactly one per scheduling call, listing what was scheduled and what failed. */
export function maintenanceHostEmail(p: {
  window: WindowInfo;
  scheduled: ScheduledLine[];
  failed: FailedLine[];
  name: string;
}): Rendered {
  const { window: w, scheduled, failed } = p;
  const subject = `Maintenance scheduled: ${scheduled.length} machine${scheduled.length === 1 ? '' : 's'}, ${failed.length} failed (${utc(w.start)}, ${w.category})`;
  const greeting = p.name ? `Hello ${p.name},` : 'Hello,';
  const sLines = scheduled.map(
    (s) =>
      `  machine ${s.machineId}: ${utc(s.start)} to ${utc(s.end)}, ${s.notificationsSent} client${s.notificationsSent === 1 ? '' : 's'} notified`,
  );
  const fLines = failed.map((f) => `  machine ${JSON.stringify(f.machineId)}: ${f.error} (${f.msg})`);
  const text = [
    greeting,
    '',
    `Your maintenance request (${hours(w.durationHours)}, category ${w.category}) was processed.`,
    '',
    `Scheduled (${scheduled.length}):`,
    ...(sLines.length ? sLines : ['  none']),
    '',
    `Failed (${failed.length}):`,
    ...(fLines.length ? fLines : ['  none']),
    '',
    '-- openrig',
  ].join('\n');
  const li = (xs: string[]) =>
    xs.length ? `<ul>${xs.map((x) => `<li>${escapeHtml(x.trim())}</li>`).join('')}</ul>` : '<p>none</p>';
  const html = page(
    subject,
    `<p>${escapeHtml(greeting)}</p>` +
      `<p>Your maintenance request (${escapeHtml(hours(w.durationHours))}, category ${escapeHtml(w.category)}) was processed.</p>` +
      `<h3>Scheduled (${scheduled.length})</h3>${li(sLines)}` +
      `<h3>Failed (${failed.length})</h3>${li(fLines)}` +
      '<p>-- openrig</p>',
  );
  return { subject, text, html };
}

/** To a client with instances on the machine when the host cancels a window (one per client per window). */
export function maintenanceCancelledEmail(p: {
  machine: MachineInfo;
  window: WindowInfo;
  instanceIds: number[];
  name: string;
}): Rendered {
  const { machine, window: w } = p;
  const host = hostFields(machine);
  const subject = `Maintenance cancelled on machine ${machine.id}: ${utc(w.start)} to ${utc(w.end)} (${w.category})`;
  const greeting = p.name ? `Hello ${p.name},` : 'Hello,';
  const ids = p.instanceIds.join(', ');
  const text = [
    greeting,
    '',
    `The host of machine ${machine.id} has cancelled this maintenance window:`,
    '',
    `  Machine:  ${machine.id}`,
    `  Start:    ${utc(w.start)}`,
    `  End:      ${utc(w.end)}`,
    `  Category: ${w.category}`,
    '',
    ...host.text,
    '',
    `Your instance${p.instanceIds.length === 1 ? '' : 's'} on this machine (${ids}) are not affected by it any more.`,
    '',
    '-- openrig',
  ].join('\n');
  const html = page(
    subject,
    `<p>${escapeHtml(greeting)}</p>` +
      `<p>The host of machine ${machine.id} has cancelled this maintenance window:</p>` +
      '<table>' +
      `<tr><th align="left">Machine</th><td>${machine.id}</td></tr>` +
      `<tr><th align="left">Start</th><td>${escapeHtml(utc(w.start))}</td></tr>` +
      `<tr><th align="left">End</th><td>${escapeHtml(utc(w.end))}</td></tr>` +
      `<tr><th align="left">Category</th><td>${escapeHtml(w.category)}</td></tr>` +
      '</table>' +
      host.html +
      `<p>Your instance${p.instanceIds.length === 1 ? '' : 's'} on this machine (${escapeHtml(ids)}) are not affected by it any more.</p>` +
      '<p>-- openrig</p>',
  );
  return { subject, text, html };
}
