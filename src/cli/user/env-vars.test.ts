// The table of `show env-vars`: sorted by name, values masked unless shown, a value's line breaks
// and other control characters written as JSON writes them so each variable stays on its row.
import { describe, expect, it } from 'vitest';
import { envVarsTable, MASK } from './env-vars.js';

const vars = { ZED: 'z', A_TOKEN: 'hf_123', PEM: '-----BEGIN-----\nab\tc\n-----END-----' };

describe('envVarsTable', () => {
  it('masks every value unless shown, sorted by name', () => {
    expect(envVarsTable(vars, false)).toBe(
      ['Name     Value', `A_TOKEN  ${MASK}`, `PEM      ${MASK}`, `ZED      ${MASK}`, ''].join('\n'),
    );
  });

  it('shows values with control characters escaped, one row per variable', () => {
    expect(envVarsTable(vars, true)).toBe(
      [
        'Name     Value',
        'A_TOKEN  hf_123',
        'PEM      -----BEGIN-----\\nab\\tc\\n-----END-----',
        'ZED      z',
        '',
      ].join('\n'),
    );
  });

  it('cuts a long value to the terminal, never the name', () => {
    const out = envVarsTable({ LONG_NAME: 'v'.repeat(200) }, true, 40);
    for (const line of out.trimEnd().split('\n')) expect([...line].length).toBeLessThanOrEqual(40);
    expect(out).toContain('LONG_NAME');
  });
});
