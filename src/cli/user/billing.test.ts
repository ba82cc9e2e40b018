// `show invoices` without a server: the times --from and --to name (a day is its whole self), the
// range checks, and the report's table, totals and today line.
import { describe, expect, it } from 'vitest';
import type { Invoices } from '../../contract/api-types.js';
import { candidates } from '../completion.js';
import { buildProgram } from '../main.js';
import { UsageError } from './context.js';
import { invoiceBound, invoiceRange, invoicesReport } from './billing.js';

// 2027-01-15T08:00:00Z: day 20833 since 1970-01-01.
const NOW = 1_800_000_000_000;
const MIDNIGHT = 20_833 * 86_400;

describe('invoiceBound', () => {
  it('a day starts at its midnight for --from and runs to the next for --to; a time is itself', () => {
    expect(invoiceBound('2027-01-15', '--from', NOW)).toBe(MIDNIGHT);
    expect(invoiceBound('2027-01-15', '--to', NOW)).toBe(MIDNIGHT + 86_400);
    expect(invoiceBound('today', '--from', NOW)).toBe(MIDNIGHT);
    expect(invoiceBound('Yesterday', '--to', NOW)).toBe(MIDNIGHT);
    expect(invoiceBound('2027-01-15T06:30Z', '--to', NOW)).toBe(MIDNIGHT + 6.5 * 3600);
    expect(invoiceBound('2027-01-15 06:30', '--from', NOW)).toBe(MIDNIGHT + 6.5 * 3600);
    expect(invoiceBound('1800000000', '--to', NOW)).toBe(1_800_000_000);
  });

  it('anything else is a usage error naming the flag', () => {
    for (const bad of ['tomorrow', 'last week', '-5', '2027-13-45', '']) {
      expect(() => invoiceBound(bad, '--from', NOW), bad).toThrow(UsageError);
      expect(() => invoiceBound(bad, '--from', NOW), bad).toThrow(/^--from: ".*" is not (a time|a day)/);
    }
  });
});

describe('invoiceRange', () => {
  it('sends what the flags name and leaves the rest to the server; --from after --to is refused', () => {
    expect(invoiceRange({}, NOW)).toEqual({ sdate: undefined, edate: undefined });
    expect(invoiceRange({ from: '2027-01-01' }, NOW)).toEqual({
      sdate: MIDNIGHT - 14 * 86_400,
      edate: undefined,
    });
    expect(invoiceRange({ from: '2027-01-15', to: '2027-01-15' }, NOW)).toEqual({
      sdate: MIDNIGHT,
      edate: MIDNIGHT + 86_400,
    });
    expect(() => invoiceRange({ from: '2027-01-16', to: '2027-01-15' }, NOW)).toThrow(
      '--from "2027-01-16" is not before --to "2027-01-15"',
    );
    expect(() => invoiceRange({ from: '2027-01-16T01:00Z', to: '2027-01-15' }, NOW)).toThrow(UsageError);
  });
});

const reply = (over: Partial<Invoices> = {}): Invoices => ({
  success: true,
  sdate: MIDNIGHT - 86_400,
  edate: MIDNIGHT + 3600,
  invoices: [
    {
      id: 4,
      type: 'payment',
      service: 'operator',
      description: 'Credit added to the account',
      amount: 25.5,
      timestamp: MIDNIGHT - 86_400 + 600,
      instance_id: null,
    },
    {
      type: 'charge',
      kind: 'compute',
      instance_id: 12,
      description: 'Instance 12 compute, 2027-01-14 (UTC)',
      quantity: 0.166667,
      rate: 3.6,
      amount: 0.6,
      timestamp: MIDNIGHT,
    },
    {
      type: 'charge',
      kind: 'disk',
      instance_id: 12,
      description: 'Instance 12 disk (72 GB), 2027-01-15 (UTC)',
      quantity: 1,
      rate: 0.01,
      amount: 0.01,
      timestamp: MIDNIGHT + 3600,
    },
  ],
  totals: { charges: 0.61, credits: 25.5 },
  current: { charges: 0.01, service_fee: 0, total: 0.01, credit: 24.89 },
  ...over,
});

describe('invoicesReport', () => {
  it('a row per item (a charge on its UTC day, a credit at its minute), the totals, today and the balance', () => {
    expect(invoicesReport(reply(), null)).toBe(
      [
        'When (UTC)        Type     Instance  Hours       Rate   Amount',
        '2027-01-14 00:10  credit          -      -          -  +$25.50',
        '2027-01-14        compute        12  0.167  $3.6000/h  $0.6000',
        '2027-01-15        disk           12  1.000  $0.0100/h  $0.0100',
        '',
        'Total 2027-01-14 00:00 UTC to 2027-01-15 01:00 UTC: charges $0.6100, credits $25.50',
        'Today (UTC) so far: charges $0.0100; balance $24.89',
        '',
      ].join('\n'),
    );
  });

  it('--charges and --credits keep their own rows and total; nothing to show says so', () => {
    const charges = invoicesReport(reply(), 'charges');
    expect(charges).not.toContain('credit ');
    expect(charges).toContain(': charges $0.6100\n');
    const credits = invoicesReport(reply(), 'credits');
    expect(credits.split('\n').filter((l) => l.startsWith('2027-'))).toHaveLength(1);
    expect(credits).toContain(': credits $25.50\n');
    expect(invoicesReport(reply({ invoices: [] }), null)).toMatch(
      /^No charges or credits from 2027-01-14 00:00 UTC to 2027-01-15 01:00 UTC\.\n\nTotal /,
    );
  });

  it('drops the rate, then the hours, on a narrow terminal', () => {
    const out = invoicesReport(reply(), null, 50);
    expect(out).not.toContain('Rate');
    expect(out).not.toContain('Hours');
    expect(out).toContain('  Amount\n');
    expect(out).toContain('2027-01-14        compute        12  $0.6000\n');
  });
});

describe('show invoices on the command line', () => {
  it('completes as a show subcommand with its flags', async () => {
    const none = async () => [];
    expect(await candidates(buildProgram(), ['show', 'inv'], none)).toEqual(['invoices']);
    expect(await candidates(buildProgram(), ['show', 'invoices', '--'], none)).toEqual(
      expect.arrayContaining(['--from', '--to', '--charges', '--credits', '--raw']),
    );
  });
});
