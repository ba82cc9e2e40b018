// `show earnings` without a server: which UTC days a WHEN and the flags name, and the report's
// tables and total line.
import { describe, expect, it } from 'vitest';
import type { MachineEarnings } from '../../contract/api-types.js';
import { candidates } from '../completion.js';
import { buildProgram } from '../main.js';
import { UsageError } from './context.js';
import { dayDate, earningsDays, earningsReport, parseDay } from './machines.js';

// 2027-01-15T08:00:00Z: day 20833 since 1970-01-01.
const NOW = 1_800_000_000_000;
const TODAY = 20_833;

describe('parseDay', () => {
  it('reads a date, an ISO time, epoch seconds, today and yesterday as the UTC day they fall in', () => {
    expect(dayDate(TODAY)).toBe('2027-01-15');
    expect(parseDay('2027-01-15', '--from', NOW)).toBe(TODAY);
    expect(parseDay('2027-01-15T23:59:59Z', '--from', NOW)).toBe(TODAY);
    expect(parseDay('2027-01-16T00:00Z', '--from', NOW)).toBe(TODAY + 1);
    // A time with a zone counts in UTC: 01:00 in UTC+02:00 is 23:00 UTC the day before.
    expect(parseDay('2027-01-15T01:00+02:00', '--from', NOW)).toBe(TODAY - 1);
    expect(parseDay('2027-01-15 01:00+02:00', '--from', NOW)).toBe(TODAY - 1);
    // A time without a zone is UTC, whatever the machine's own time zone.
    expect(parseDay('2027-01-15 23:30', '--from', NOW)).toBe(TODAY);
    expect(parseDay('1800000000', '--from', NOW)).toBe(TODAY);
    expect(parseDay('0', '--from', NOW)).toBe(0);
    expect(parseDay('today', '--to', NOW)).toBe(TODAY);
    expect(parseDay(' Yesterday ', '--to', NOW)).toBe(TODAY - 1);
  });

  it('refuses anything else as a usage error naming the flag', () => {
    for (const bad of ['tomorrow', '', '2027-13-45', 'last week', '-5', 'Jan 15 2027', '2027-01-15t08:00']) {
      expect(() => parseDay(bad, '--from', NOW)).toThrow(UsageError);
      expect(() => parseDay(bad, '--from', NOW)).toThrow(/^--from: ".*" is not a day: give a date like/);
    }
    expect(() => parseDay('1969-12-31', '--to', NOW)).toThrow('--to: "1969-12-31" is before 1970-01-01');
  });
});

describe('earningsDays', () => {
  it('defaults: the current period (this month through today); --from alone through today; --to alone that one day', () => {
    expect(earningsDays({}, NOW)).toEqual({ from: TODAY - 14, to: TODAY });
    // A host who started today, on the first of a month, sees today: never an empty yesterday.
    expect(earningsDays({}, Date.UTC(2027, 1, 1, 9))).toEqual({ from: TODAY + 17, to: TODAY + 17 });
    expect(earningsDays({ from: '2027-01-01' }, NOW)).toEqual({ from: TODAY - 14, to: TODAY });
    expect(earningsDays({ to: '2027-01-10' }, NOW)).toEqual({ from: TODAY - 5, to: TODAY - 5 });
    expect(earningsDays({ from: '2027-01-01', to: '2027-01-10' }, NOW)).toEqual({
      from: TODAY - 14,
      to: TODAY - 5,
    });
    expect(earningsDays({ from: 'today' }, NOW)).toEqual({ from: TODAY, to: TODAY });
  });

  it('a start after the end is a usage error that gives both dates', () => {
    expect(() => earningsDays({ from: '2027-01-10', to: '2027-01-09' }, NOW)).toThrow(
      new UsageError('--from 2027-01-10 is after --to 2027-01-09'),
    );
    expect(() => earningsDays({ from: '2027-02-01' }, NOW)).toThrow(
      '--from 2027-02-01 is after today 2027-01-15',
    );
  });
});

const reply = (over: Partial<MachineEarnings> = {}): MachineEarnings => {
  const amounts = (gpu: number, sto: number) => ({
    gpu_earn: gpu,
    sto_earn: sto,
    bwu_earn: 0,
    bwd_earn: 0,
    earn: gpu + sto,
  });
  return {
    success: true,
    sday: TODAY - 1,
    eday: TODAY,
    start: (TODAY - 1) * 86_400,
    end: (TODAY + 1) * 86_400,
    summary: { total_gpu: 12.5, total_stor: 0.254, total_bwu: 0, total_bwd: 0, total_earn: 12.754 },
    current: { balance: 0, service_fee: 0, total: 0, credit: 0 },
    per_machine: [
      { machine_id: 7, ...amounts(12.5, 0.254) },
      { machine_id: 12, ...amounts(0, 0) },
    ],
    per_day: [
      { day: TODAY - 1, date: '2027-01-14', ...amounts(10, 0.2) },
      { day: TODAY, date: '2027-01-15', ...amounts(2.5, 0.054) },
    ],
    ...over,
  };
};

describe('earningsReport', () => {
  it('a per-day table, a per-machine table and the total line, in dollars and cents', () => {
    expect(earningsReport(reply())).toBe(
      [
        'Day (UTC)   Compute   Disk   Total',
        '2027-01-14   $10.00  $0.20  $10.20',
        '2027-01-15    $2.50  $0.05   $2.55',
        '',
        'Machine  Compute   Disk   Total',
        '      7   $12.50  $0.25  $12.75',
        '     12    $0.00  $0.00   $0.00',
        '',
        'Total 2027-01-14 to 2027-01-15: $12.75 (compute $12.50, disk $0.25)',
        '',
      ].join('\n'),
    );
  });

  it('one day names the day alone; a host without machines is told so', () => {
    const out = earningsReport(
      reply({
        sday: TODAY,
        eday: TODAY,
        per_machine: [],
        per_day: [
          { day: TODAY, date: '2027-01-15', gpu_earn: 0, sto_earn: 0, bwu_earn: 0, bwd_earn: 0, earn: 0 },
        ],
        summary: { total_gpu: 0, total_stor: 0, total_bwu: 0, total_bwd: 0, total_earn: 0 },
      }),
    );
    expect(out).toContain('\nNo machines.\n');
    expect(out.endsWith('\nTotal 2027-01-15: $0.00 (compute $0.00, disk $0.00)\n')).toBe(true);
  });
});

describe('show earnings on the command line', () => {
  it('completes as a show subcommand with its flags', async () => {
    const none = async () => [];
    expect(await candidates(buildProgram(), ['show', 'ea'], none)).toEqual(['earnings']);
    expect(await candidates(buildProgram(), ['show', 'earnings', '--'], none)).toEqual(
      expect.arrayContaining(['--from', '--to', '--machine', '--raw']),
    );
  });
});
