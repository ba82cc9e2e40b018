import { expect, it } from 'vitest';
import { roundPrice } from './money.js';

it('rounds prices to micro-dollars, turning subnormal doubles into 0', () => {
  expect(roundPrice(5e-324)).toBe(0);
  expect(roundPrice(0.1234567)).toBe(0.123457);
  expect(roundPrice(1000)).toBe(1000);
  expect(roundPrice(0.4)).toBe(0.4);
});
