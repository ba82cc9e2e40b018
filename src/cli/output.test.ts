import { describe, expect, it } from 'vitest';
import {
  fitLine,
  fmtDuration,
  fmtMbAsGb,
  fmtUsd,
  keyValues,
  relativeTime,
  table,
  utcTime,
} from './output.js';
import { apiKeysTable, instancesTable, maintsTable, sshKeysTable, tfaMethodsTable } from './user/views.js';
import { webhooksTable } from './user/webhooks.js';
import type { Webhook } from '../contract/api-types.js';

describe('tables', () => {
  it('aligns columns (numbers and their headers right) with no trailing spaces', () => {
    const out = table(
      [
        { id: 1, name: 'a', price: '$0.500' },
        { id: 123, name: 'longer name', price: '$12.000' },
      ],
      [
        { header: 'ID', get: (r) => String(r.id), align: 'right' },
        { header: 'Name', get: (r) => r.name },
        { header: '$/hr', get: (r) => r.price, align: 'right' },
      ],
    );
    expect(out).toBe(
      [' ID  Name            $/hr', '  1  a             $0.500', '123  longer name  $12.000', ''].join('\n'),
    );
  });

  it('never passes control characters from the server to the terminal', () => {
    const out = table([{ s: 'evil\u001b[2Jlabel' }], [{ header: 'L', get: (r) => r.s }]);
    expect(out).not.toContain('\u001b');
    expect(keyValues([['Label', 'x\u0007y']])).toBe('Label: x y\n');
  });
});

describe('units and times', () => {
  it('shows MB as GB and dollars', () => {
    expect(fmtMbAsGb(24_564)).toBe('24.6 GB');
    expect(fmtMbAsGb(undefined)).toBe('-');
    expect(fmtUsd(0.5)).toBe('$0.500');
    expect(fmtUsd('0.25', 2)).toBe('$0.25');
    expect(fmtUsd(null)).toBe('-');
  });

  it('formats durations compactly', () => {
    expect(fmtDuration(0)).toBe('0s');
    expect(fmtDuration(45)).toBe('45s');
    expect(fmtDuration(200)).toBe('3m 20s');
    expect(fmtDuration(3600)).toBe('1h');
    expect(fmtDuration(7500)).toBe('2h 5m');
    expect(fmtDuration(3 * 86_400 + 4 * 3600 + 59)).toBe('3d 4h');
  });

  it('says how long ago or how far ahead an epoch-seconds time is', () => {
    const now = 1_800_000_000_000;
    expect(relativeTime(1_800_000_000 - 300, now)).toBe('5m ago');
    expect(relativeTime(1_800_000_000 + 9000, now)).toBe('in 2h 30m');
    expect(relativeTime(1_800_000_002, now)).toBe('just now');
    expect(relativeTime(null, now)).toBe('-');
  });

  it('prints UTC times for maintenance windows', () => {
    expect(utcTime(1_800_000_000)).toBe('2027-01-15 08:00 UTC');
  });
});

describe('tables that fit the terminal', () => {
  const rows = [{ a: '1', b: 'bbbbbbbbbb', c: 'a long cell of text here', d: 'dd' }];
  const cols = [
    { header: 'A', get: (r: (typeof rows)[0]) => r.a },
    { header: 'B', get: (r: (typeof rows)[0]) => r.b, drop: 2 },
    { header: 'C', get: (r: (typeof rows)[0]) => r.c, shrink: true },
    { header: 'D', get: (r: (typeof rows)[0]) => r.d, drop: 1 },
  ];
  it('prints every column without a width', () => {
    expect(table(rows, cols)).toBe(
      'A  B           C                         D\n1  bbbbbbbbbb  a long cell of text here  dd\n',
    );
  });
  it('drops the least useful columns first, then cuts a shrinkable one short', () => {
    expect(table(rows, cols, 40)).toBe('A  B           C\n1  bbbbbbbbbb  a long cell of text here\n');
    expect(table(rows, cols, 20)).toBe('A  C\n1  a long cell of t…\n');
    for (const line of table(rows, cols, 20).split('\n')) expect(line.length).toBeLessThanOrEqual(20);
  });
  it('cuts a row at the edge when the columns that stay are still too wide', () => {
    expect(table(rows, cols, 8)).toBe('A  C\n1  a lo…\n');
    expect(fitLine('2026-11-24T14:59:29Z  instance.created  evt_1', 20)).toBe('2026-11-24T14:59:29…');
    expect(fitLine('short', 20)).toBe('short');
    expect(fitLine('not cut when piped', undefined)).toBe('not cut when piped');
  });
});

describe('every table of the CLI fits 50 columns', () => {
  const now = Date.UTC(2027, 0, 15, 8);
  it('instances, SSH keys, API keys, maintenance windows, 2FA methods, webhooks', () => {
    const outs = [
      instancesTable(
        [
          {
            id: 12,
            machine_id: 3,
            actual_status: 'running',
            intended_status: 'running',
            num_gpus: 8,
            gpu_name: 'RTX 4090',
            ssh_host: '203.0.113.77',
            ssh_port: 41022,
            image_uuid: 'pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime',
            dph_total: 3.2,
            label: 'training run 3',
          },
        ],
        now,
        50,
      ),
      sshKeysTable(
        [
          {
            id: 1,
            key_type: 'ssh-ed25519',
            fingerprint: 'SHA256:xpxmtCGoe1QVEmjdHjsUpifUMsjcC/T8my55UNMDtz4',
            comment: 'someone@a-laptop-with-a-long-name',
            created_at: now / 1000,
          },
        ],
        now,
        50,
      ),
      apiKeysTable(
        [
          {
            id: 3,
            name: 'ci deploy key',
            key_prefix: 'or_5J_xvqe',
            permissions: null,
            created_at: now / 1000,
          },
        ],
        now,
        50,
      ),
      maintsTable(
        [
          {
            id: 4,
            machine_id: 9,
            start_time: now / 1000 + 7200,
            end_time: now / 1000 + 9000,
            duration_hours: 0.5,
            maintenance_category: 'software',
          },
        ],
        now,
        50,
      ),
      tfaMethodsTable(
        [
          {
            id: 1,
            user_id: 5,
            method: 'totp',
            label: 'phone',
            is_primary: true,
            fail_count: 0,
            locked_until: null,
            last_used: now / 1000,
            created_at: now / 1000,
          },
        ],
        now,
        50,
      ),
      webhooksTable(
        [
          {
            id: 2,
            url: 'https://hooks.example.com/openrig/events/with/a/long/path',
            events: ['instance.*', 'tfa.locked'],
            enabled: true,
            description: 'pager',
          },
        ] as Webhook[],
        now,
        50,
      ),
    ];
    for (const out of outs)
      for (const l of out.trimEnd().split('\n')) expect([...l].length, l).toBeLessThanOrEqual(50);
    // What stays: the ID and the SSH address of an instance, a key's fingerprint (cut).
    expect(outs[0]).toMatch(/^\s*12\s+running\s.*203\.0\.113\.77:41022/m);
    expect(outs[1]).toMatch(/SHA256:/);
  });
});
