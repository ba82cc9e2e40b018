// The prepaid deposit's pure rules: the discount schedule (and its variable's parsing), the
// months a deposit covers, and how a charge splits between deposit, discount and balance, exactly.
import { describe, expect, it } from 'vitest';
import { coverPart, discountRate, monthsCovered, splitCharge } from './billing.prepay.js';
import { DEFAULT_PREPAY_DISCOUNTS, prepayDiscounts } from '../../config.js';

const schedule = prepayDiscounts({});

describe('prepay discount schedule', () => {
  it('defaults to 5 % from a month, 10 % from 3, 15 % from 6, 20 % from 12', () => {
    expect(DEFAULT_PREPAY_DISCOUNTS).toBe('1:5,3:10,6:15,12:20');
    expect(schedule).toEqual([
      { months: 1, rate: 0.05 },
      { months: 3, rate: 0.1 },
      { months: 6, rate: 0.15 },
      { months: 12, rate: 0.2 },
    ]);
  });

  it('gives the rate of the highest threshold reached', () => {
    expect(discountRate(schedule, 0)).toBe(0);
    expect(discountRate(schedule, 0.999)).toBe(0);
    expect(discountRate(schedule, 1)).toBe(0.05);
    expect(discountRate(schedule, 5.9)).toBe(0.1);
    expect(discountRate(schedule, 12)).toBe(0.2);
    expect(discountRate(schedule, 400)).toBe(0.2);
    expect(discountRate([], 400)).toBe(0);
  });

  it('parses MONTHS:PERCENT pairs and none', () => {
    expect(prepayDiscounts({ OPENRIG_PREPAY_DISCOUNTS: ' 0.5:2 , 2:2.5 ' })).toEqual([
      { months: 0.5, rate: 0.02 },
      { months: 2, rate: 0.025 },
    ]);
    expect(prepayDiscounts({ OPENRIG_PREPAY_DISCOUNTS: 'none' })).toEqual([]);
  });

  it.each([
    ['3', 'is not MONTHS:PERCENT'],
    ['1:5,1:6', 'ascending'],
    ['1:10,3:5', 'never falls'],
    ['0:5', 'above 0'],
    ['1:95', 'at most 90'],
    ['1:-5', 'is not MONTHS:PERCENT'],
  ])('refuses %s at start, naming the rule', (raw, why) => {
    expect(() => prepayDiscounts({ OPENRIG_PREPAY_DISCOUNTS: raw })).toThrow(why);
  });
});

describe('months covered', () => {
  it('is the deposit over a 720-hour month of list-price charges', () => {
    // 1 $/h: a month is 720 $.
    expect(monthsCovered(720_000_000, 1)).toBe(1);
    expect(monthsCovered(2_160_000_000, 0.5)).toBe(6);
    expect(monthsCovered(1_000_000, 0)).toBe(0);
  });
});

describe('splitting a charge', () => {
  it('takes a covered charge from the deposit at the discount, nothing from the balance', () => {
    expect(coverPart(1000, 5000, 0.1)).toEqual({ fromDeposit: 900, discount: 100, fromBalance: 0 });
    expect(coverPart(1000, 900, 0.1)).toEqual({ fromDeposit: 900, discount: 100, fromBalance: 0 });
  });

  it('uses a short deposit up and charges the rest to the balance at the list rate', () => {
    // 450 µ$ at 10 % off buys 500 µ$ of list charges; the other 500 are the balance's.
    expect(coverPart(1000, 450, 0.1)).toEqual({ fromDeposit: 450, discount: 50, fromBalance: 500 });
    expect(coverPart(1000, 0, 0.1)).toEqual({ fromDeposit: 0, discount: 0, fromBalance: 1000 });
    expect(coverPart(0, 10, 0.1)).toEqual({ fromDeposit: 0, discount: 0, fromBalance: 0 });
  });

  it('adds up to the list amount exactly, every part whole and never negative', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 2000; i++) {
      const compute = rnd(10_000_000);
      const disk = rnd(100_000);
      const avail = rnd(12_000_000);
      const rate = [0, 0.05, 0.1, 0.15, 0.2, 0.333, 0.9][rnd(7)]!;
      const s = splitCharge(compute, disk, avail, rate);
      for (const p of [s.compute, s.disk]) {
        for (const v of Object.values(p)) {
          expect(Number.isInteger(v)).toBe(true);
          expect(v).toBeGreaterThanOrEqual(0);
        }
      }
      expect(s.compute.fromDeposit + s.compute.discount + s.compute.fromBalance).toBe(compute);
      expect(s.disk.fromDeposit + s.disk.discount + s.disk.fromBalance).toBe(disk);
      expect(s.drawn).toBeLessThanOrEqual(avail);
      // The balance pays only once the deposit is used up.
      if (s.fromBalance > 0) expect(s.drawn).toBe(avail);
    }
  });

  it('pays compute first, then disk from what is left', () => {
    const s = splitCharge(1000, 100, 950, 0.1);
    expect(s.compute).toEqual({ fromDeposit: 900, discount: 100, fromBalance: 0 });
    // 50 µ$ left buy round(50 / 0.9) = 56 µ$ of disk.
    expect(s.disk).toEqual({ fromDeposit: 50, discount: 6, fromBalance: 44 });
  });
});
