import { describe, expect, it } from 'vitest';
import { InstanceJournal } from './instance-journal.js';

describe('InstanceJournal', () => {
  const at = () => new Date('2026-01-02T03:04:05.000Z');

  it('keeps the lines about each instance apart, stamped, and passes every line through', () => {
    const j = new InstanceJournal(at);
    const seen: string[] = [];
    const log = j.wrap({
      info: (m) => seen.push(`i:${m}`),
      warn: (m) => seen.push(`w:${m}`),
      error: (m) => seen.push(`e:${m}`),
    });
    log.info('instance 7 running, SSH on port 40022');
    log.warn('sync failed (will retry): timeout');
    log.error('instance 8: pull failed');
    log.info('instance 70: stop');
    expect(seen).toEqual([
      'i:instance 7 running, SSH on port 40022',
      'w:sync failed (will retry): timeout',
      'e:instance 8: pull failed',
      'i:instance 70: stop',
    ]);
    expect(j.text(7, null)).toBe('2026-01-02T03:04:05.000Z INFO instance 7 running, SSH on port 40022\n');
    expect(j.text(8, null)).toBe('2026-01-02T03:04:05.000Z ERROR instance 8: pull failed\n');
    expect(j.text(70, null)).toContain('instance 70: stop');
    expect(j.text(9, null)).toBe('');
  });

  it('answers the last `tail` lines and keeps a bounded number per instance', () => {
    const j = new InstanceJournal(at);
    for (let i = 0; i < 1005; i++) j.record(1, 'info', `instance 1 line ${i}`);
    const all = j.text(1, null).trimEnd().split('\n');
    expect(all).toHaveLength(1000);
    expect(all[0]).toMatch(/line 5$/);
    expect(j.text(1, 2)).toMatch(/line 1003\n.*line 1004\n$/);
    expect(j.text(1, 0)).toBe('');
  });

  it('forgets the least recently written instance first when it holds too many', () => {
    const j = new InstanceJournal(at);
    for (let id = 1; id <= 2000; id++) j.record(id, 'info', `instance ${id} started`);
    j.record(1, 'info', 'instance 1 still here');
    j.record(2001, 'info', 'instance 2001 started');
    expect(j.text(1, null)).toContain('still here');
    expect(j.text(2, null)).toBe('');
    expect(j.text(2001, null)).toContain('started');
  });
});
