import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ManualClock } from '../../clock.js';
import { OutboxSmsProvider } from './sms.outbox.js';
import { isBlockedNumber } from './sms.abuse.js';
import type { Config } from '../../config.js';

describe('outbox SMS provider', () => {
  it('appends {"at","to","body"} lines with the six-digit code in the body', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-sms-'));
    try {
      const file = path.join(dir, 'nested', 'sms.jsonl');
      const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5));
      const p = new OutboxSmsProvider(file, clock, 600);
      expect(p.codes).toBe('local');
      await p.send({ to: '+14155550001', code: '012345', previousRef: null });
      await p.send({ to: '+14155550002', code: '987654', previousRef: null });
      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toHaveLength(2);
      expect(Object.keys(lines[0])).toEqual(['at', 'to', 'body']);
      expect(lines[0]).toMatchObject({ at: '2026-01-02T03:04:05.000Z', to: '+14155550001' });
      expect(/\b(\d{6})\b/.exec(lines[0].body)![1]).toBe('012345');
      expect(lines[0].body).toContain('10 minutes');
      expect(statSync(file).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SMS abuse rules (pure parts)', () => {
  const cfg = {
    blockedPrefixes: ['+881', '99', '+14155550999'],
    resendAfterS: 60,
  } as unknown as Config['sms'];

  it('blocks numbers by prefix (with or without +) or whole number', () => {
    expect(isBlockedNumber(cfg, '+8816123456')).toBe(true);
    expect(isBlockedNumber(cfg, '+99123456')).toBe(true);
    expect(isBlockedNumber(cfg, '+14155550999')).toBe(true);
    expect(isBlockedNumber(cfg, '+14155550998')).toBe(false);
    expect(isBlockedNumber({ ...cfg, blockedPrefixes: [] }, '+8816123456')).toBe(false);
  });
});
