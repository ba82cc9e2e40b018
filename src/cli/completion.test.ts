import { describe, expect, it } from 'vitest';
import { candidates } from './completion.js';
import { buildProgram } from './main.js';

const IDS = ['12', '7'];
const ids = async () => IDS;
const complete = (words: string[]) => candidates(buildProgram(), words, ids);

describe('shell completion', () => {
  it('offers instance IDs for every command whose first argument is one', async () => {
    for (const path of [
      'show instance',
      'stop instance',
      'start instance',
      'destroy instance',
      'label instance',
      'reboot instance',
      'recycle instance',
      'update instance',
      'ssh',
      'ssh-url',
      'scp-url',
      'wait',
      'logs',
      'execute',
    ])
      expect(await complete([...path.split(' '), '']), path).toEqual(['12', '7']);
    expect(await complete(['update', 'instance', '1'])).toEqual(['12']);
  });

  it('offers no IDs where another thing is asked for', async () => {
    expect(await complete(['label', 'instance', '12', ''])).toEqual([]);
    expect(await complete(['ssh-key', 'delete', ''])).toEqual([]);
    expect(await complete(['show', 'machines', ''])).toEqual([]);
    // The value of an option, then the ID again.
    expect(await complete(['logs', '--tail', ''])).toEqual([]);
    expect(await complete(['logs', '--tail', '5', ''])).toEqual(['12', '7']);
    // A list of IDs: each one.
    expect(await complete(['stop', 'instance', '12', ''])).toEqual(['12', '7']);
  });

  it('offers the flags of the command for `--` and `-`', async () => {
    const flags = await complete(['show', 'instance', '--']);
    expect(flags).toEqual(expect.arrayContaining(['--raw', '--url', '--api-key']));
    expect(flags.every((f) => f.startsWith('--'))).toBe(true);
    expect(await complete(['update', 'instance', '3', '--ima'])).toEqual(['--image']);
  });
});
