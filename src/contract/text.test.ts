import { describe, expect, it } from 'vitest';
import { textOf } from './text.js';

describe('textOf', () => {
  it('writes scalars as String() does and objects as JSON', () => {
    expect(textOf('a')).toBe('a');
    expect(textOf(1.5)).toBe('1.5');
    expect(textOf(true)).toBe('true');
    expect(textOf(10n)).toBe('10');
    expect(textOf(null)).toBe('');
    expect(textOf(undefined)).toBe('');
    expect(textOf({ a: 1 })).toBe('{"a":1}');
    expect(textOf([1, 'x'])).toBe('[1,"x"]');
    expect(textOf(Symbol('s'))).toBe('');
  });
});
