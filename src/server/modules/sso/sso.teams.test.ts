// Which role each mapped team should give for a groups claim (pure).
import { describe, expect, it } from 'vitest';
import { desiredTeams, groupsOf } from './sso.teams.js';

const mappings = [
  { group: 'gpu-admins', team: 'research', role: 'manager' },
  { group: 'gpu-users', team: 'research', role: 'member' },
  { group: 'ops', team: 'operations', role: 'member' },
];

describe('desiredTeams', () => {
  it('gives each mapped team the role of the first mapping of a listed group', () => {
    expect(desiredTeams(mappings, ['gpu-users', 'gpu-admins'])).toEqual(
      new Map([
        ['research', 'manager'],
        ['operations', null],
      ]),
    );
    expect(desiredTeams(mappings, ['gpu-users', 'ops'])).toEqual(
      new Map([
        ['research', 'member'],
        ['operations', 'member'],
      ]),
    );
  });

  it('names every mapped team, to leave, when no listed group maps to it; no other team', () => {
    expect([...desiredTeams(mappings, ['unrelated'])]).toEqual([
      ['research', null],
      ['operations', null],
    ]);
    expect(desiredTeams([], ['gpu-users']).size).toBe(0);
  });
});

describe('groupsOf', () => {
  it('takes a list of strings or one string; anything else lists none', () => {
    expect(groupsOf(['a', 1, 'b'])).toEqual(['a', 'b']);
    expect(groupsOf('a')).toEqual(['a']);
    expect(groupsOf(undefined)).toEqual([]);
    expect(groupsOf({ a: 1 })).toEqual([]);
  });
});
