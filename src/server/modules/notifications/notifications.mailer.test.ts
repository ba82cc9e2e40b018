import { describe, expect, it } from 'vitest';
import { fromDomain, messageIdFor, outboxLine, redactSmtp, textToHtml } from './notifications.mailer.js';
import { maintenanceClientEmail } from '../maintenance/maintenance.mail.js';
import { utc } from './notifications.format.js';
import { backoffMs, BACKOFF_CAP_MS } from './notifications.relay.js';

describe('mail helpers', () => {
  it('derives a stable RFC 5322 Message-ID from the idempotency key and the From domain', () => {
    const a = messageIdFor('maint:1:client:2', 'openrig <noreply@Rig.Example>');
    expect(a).toMatch(/^<[0-9a-f]{40}@rig\.example>$/);
    expect(messageIdFor('maint:1:client:2', 'openrig <noreply@rig.example>')).toBe(a);
    expect(messageIdFor('maint:1:client:3', 'openrig <noreply@rig.example>')).not.toBe(a);
    expect(fromDomain('no address')).toBe('openrig.local');
  });

  it('writes the outbox line with exactly at, to, subject, text', () => {
    const line = outboxLine({
      to: 'a@b.c',
      subject: 's',
      text: 't\nu',
      date: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)),
    });
    expect(line.endsWith('\n')).toBe(true);
    expect(line.trim().includes('\n')).toBe(false);
    expect(JSON.parse(line)).toEqual({
      at: '2026-01-02T03:04:05.000Z',
      to: 'a@b.c',
      subject: 's',
      text: 't\nu',
    });
  });

  it('gives a text-only e-mail an escaped HTML part', () => {
    expect(textToHtml('Code: 123456 <b>')).toContain(
      '<pre style="font-family:sans-serif;white-space:pre-wrap">Code: 123456 &lt;b&gt;</pre>',
    );
  });

  it('removes SMTP passwords from error messages', () => {
    expect(redactSmtp('failed smtp://u:p%40ss@h:25 and p@ss', 'smtp://u:p%40ss@h:25')).toBe(
      'failed smtp://u:[redacted]@h:25 and [redacted]',
    );
    expect(redactSmtp('plain', null)).toBe('plain');
  });

  it('backs off exponentially from 5 s, capped at 1 h', () => {
    expect([1, 2, 3, 4].map(backoffMs)).toEqual([5000, 10000, 20000, 40000]);
    expect(backoffMs(50)).toBe(BACKOFF_CAP_MS);
  });

  it('renders times in UTC and escapes HTML', () => {
    expect(utc(Date.UTC(2026, 10, 23, 14, 0, 0))).toBe('2026-11-23 14:00:00 UTC');
    const m = maintenanceClientEmail({
      machine: { id: 9, gpu_name: '<b>', num_gpus: 1, hostname: '' },
      window: { start: 0, end: 3_600_000, durationHours: 1, category: 'gpu' },
      instanceIds: [4],
      name: 'A & B',
    });
    expect(m.html).toContain('1x &quot;&lt;b&gt;&quot;');
    expect(m.html).toContain('A &amp; B');
    expect(m.text).toContain('1x "<b>"');
  });
});
