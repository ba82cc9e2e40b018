import { describe, expect, it } from 'vitest';
import { fmtDuration, fmtMbAsGb, fmtUsd, keyValues, relativeTime, table, utcTime } from './output.js';

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
});
