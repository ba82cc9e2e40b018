// What every module's e-mails (`<module>.mail.ts`) share: the rendered form, HTML escaping, and
// how times and durations read (always UTC).

export interface Rendered {
  subject: string;
  text: string;
  html: string;
}

export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/** `2026-11-23 14:00:00 UTC` */
export function utc(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, ' UTC');
}

export function hours(h: number): string {
  const r = Math.round(h * 100) / 100;
  return `${r} hour${r === 1 ? '' : 's'}`;
}
