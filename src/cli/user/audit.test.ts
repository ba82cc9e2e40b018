import { describe, expect, it } from 'vitest';
import type { AuditLogRow } from '../../contract/api-types.js';
import { argsText, auditTable, credentialText, ipaddrsTable, utcSeconds } from './audit.js';

const row = (over: Partial<AuditLogRow> = {}): AuditLogRow => ({
  id: 1,
  created_at: Date.UTC(2026, 10, 23, 14, 0, 5) / 1000,
  ip_address: '203.0.113.7',
  api_key_id: 12,
  credential: 'api_key',
  api_route: 'PUT /api/v0/instances/{id}/',
  status: 200,
  args: { path: { id: '7' }, query: { a: ['1', '2'] }, body: ['state', 'label'] },
  ...over,
});

describe('show audit-log', () => {
  it('prints time to the second in UTC, the credential with its key, the request, status and args', () => {
    expect(utcSeconds(row().created_at)).toBe('2026-11-23 14:00:05 UTC');
    expect(credentialText(row())).toBe('API key 12');
    expect(credentialText(row({ credential: 'session_key', api_key_id: null }))).toBe('CLI session');
    expect(credentialText(row({ credential: 'login_secret', api_key_id: null }))).toBe('2FA sign-in');
    expect(argsText(row().args)).toBe('id=7 ?a=1&a=2 {state, label}');
    expect(argsText({})).toBe('-');
    const out = auditTable([
      row(),
      row({ id: 2, status: 401, credential: 'password', api_key_id: null, args: {} }),
    ]);
    expect(out.split('\n')[0]).toMatch(/^Time\s+Address\s+Credential\s+Request\s+Status\s+Args$/);
    expect(out).toContain('PUT /api/v0/instances/{id}/');
    expect(out).toContain('password sign-in');
  });

  it('fits a narrow terminal: the credential, then the address dropped, then the args cut short', () => {
    const long = row({ args: { body: Array.from({ length: 20 }, (_, i) => `field_${i}`) } });
    const wide = auditTable([long]);
    expect(wide.split('\n')[0]).toContain('Credential');
    const out = auditTable([long], 80);
    expect(out.split('\n')[0]).not.toContain('Credential');
    expect(out.split('\n')[0]).not.toContain('Address');
    expect(out).toContain('…');
    for (const l of out.trimEnd().split('\n')) expect(l.length).toBeLessThanOrEqual(80);
  });
});

describe('show ipaddrs', () => {
  it('prints each address, when it was first seen and how long ago last', () => {
    const now = Date.UTC(2026, 10, 23, 15, 0, 0);
    const out = ipaddrsTable(
      [
        {
          ip: '198.51.100.4',
          first_seen: now / 1000 - 86_400,
          last_seen: now / 1000 - 120,
          first_location: null,
        },
      ],
      now,
    );
    expect(out).toContain('198.51.100.4');
    expect(out).toContain('2026-11-22 15:00:00 UTC');
    expect(out).toContain('2m ago');
  });
});
