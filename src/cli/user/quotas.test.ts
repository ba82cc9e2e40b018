// The table of `openrig quotas show`: the team's row first, then each member's, each limit beside
// what is used against it ("-" for no limit).
import { describe, expect, it } from 'vitest';
import { quotasTable } from './quotas.js';

describe('quotasTable', () => {
  it('shows used / limit for the team and each member', () => {
    const out = quotasTable({
      team_id: 3,
      month: '2026-11',
      team: {
        max_gpus: 4,
        max_dph: null,
        month_budget: 100,
        running_gpus: 2,
        running_dph: 1.5,
        month_spend: 80.25,
      },
      members: [
        {
          user_id: 7,
          email: 'bob@example.com',
          role: 'member',
          max_gpus: 1,
          max_dph: 0.5,
          month_budget: null,
          running_gpus: 1,
          running_dph: 0.5,
          month_spend: 10,
        },
      ],
    });
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/Who\s+GPUs\s+\$\/h\s+Month/);
    expect(lines[1]).toMatch(/team 3\s+2 \/ 4\s+\$1\.50 \/ -\s+\$80\.25 \/ \$100\.00/);
    expect(lines[2]).toMatch(/bob@example\.com \(member\)\s+1 \/ 1\s+\$0\.50 \/ \$0\.50\s+\$10\.00 \/ -/);
  });
});
