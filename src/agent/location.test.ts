// --location in the form the server stores and renters' country searches match.
import { describe, expect, it } from 'vitest';
import { parseLocation } from './location.js';

describe('parseLocation', () => {
  it('takes "City, CC" and a bare country code, the code in upper case', () => {
    expect(parseLocation('Oslo, NO')).toEqual({ location: 'Oslo, NO' });
    expect(parseLocation(' Oslo,no ')).toEqual({ location: 'Oslo, NO' });
    expect(parseLocation('Portland, Oregon, US')).toEqual({ location: 'Portland, Oregon, US' });
    expect(parseLocation('no')).toEqual({ location: 'NO' });
  });

  it('refuses what a country search could not find, saying the forms it takes', () => {
    for (const bad of ['', 'Oslo', 'Norway', 'Oslo, NOR', ', NO', 'Oslo\n, NO', 'x'.repeat(99) + ', NO'])
      expect(parseLocation(bad)).toEqual({
        error: expect.stringContaining('"City, CC" or a two-letter country code'),
      });
  });
});
