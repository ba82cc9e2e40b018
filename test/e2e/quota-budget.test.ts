// Quotas with real processes: `serve`, an `openrig agent` on the process runtime, a team whose
// owner sets a month budget. A member over their GPU cap is refused with 403 quota_exceeded; the
// owner's instance runs until the month's charges reach the budget, then the budget check stops it
// (never destroys it), the agent really stops its process, and the owner gets the e-mail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
  callApi,
  createUser,
  endInstanceGroups,
  processAgentArgs,
  startProc,
  startServe,
  waitFor,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'cd'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_SWEEP_INTERVAL_MS: '200',
  OPENRIG_METER_INTERVAL_MS: '500',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl renter@laptop';

describe('a month budget, end to end', () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-quota-e2e-'));
    stateDir = path.join(dir, 'agent-state');
    serve = await startServe(['--data', dir], ENV);
  });
  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    endInstanceGroups(stateDir);
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a member over their GPU cap; a spent budget stops the team's instance and e-mails the owner", async () => {
    const api = (method: string, p: string, key: string, body?: unknown) =>
      callApi(serve.url, method, p, key, body);
    const host = await createUser(dir, ENV, 'host@example.com');
    const owner = (await createUser(dir, ENV, 'owner@example.com', [
      '--team',
      'lab',
      '--balance',
      '50',
    ])) as unknown as {
      api_key: string;
      team_api_key: string;
    };
    const member = (await createUser(dir, ENV, 'member@example.com', ['--team', 'lab'])) as unknown as {
      id: number;
      api_key: string;
      team_api_key: string;
    };
    agent = startProc(processAgentArgs(serve.url, stateDir), {
      ...ENV,
      OPENRIG_LOG_LEVEL: 'info',
      OPENRIG_API_KEY: host.api_key,
    });
    const [machine] = await waitRegistered(agent);

    // The team's account: an SSH key and $20 from the owner.
    expect((await api('POST', '/api/v0/ssh/', owner.team_api_key, { ssh_key: PUB })).status).toBe(200);
    const me = await api('GET', '/api/v0/users/current', owner.team_api_key);
    const sent = await api('PUT', '/api/v0/commands/transfer_credit/', owner.api_key, {
      sender: 'me',
      recipient: me.body.email,
      amount: 20,
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);

    // The member may run one GPU; the machine has two.
    const cap = await api('PUT', '/api/v0/quotas/', owner.team_api_key, { user_id: member.id, max_gpus: 1 });
    expect(cap.status, JSON.stringify(cap.body)).toBe(200);
    const refused = await api('PUT', `/api/v0/asks/${machine}/`, member.team_api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      error: 'quota_exceeded',
      scope: 'member',
      limit: 'max_gpus',
      limit_value: 1,
      requested: 2,
    });

    // $1/hour: a $0.002 budget is spent in about 7 seconds.
    expect((await api('PUT', '/api/v0/quotas/', owner.team_api_key, { month_budget: 0.002 })).status).toBe(
      200,
    );
    const created = await api('PUT', `/api/v0/asks/${machine}/`, owner.team_api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
      onstart: 'sleep 600',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.new_contract as number;
    const show = async () =>
      (await api('GET', `/api/v0/instances/${id}/`, owner.team_api_key)).body.instances;
    await waitFor(
      async () => ((await show())?.actual_status === 'running' ? true : null),
      'running',
      30_000,
      500,
    );
    // main.pid is read while the instance runs: a stop removes it first.
    const pid = Number(
      readFileSync(path.join(stateDir, 'instances', String(id), 'main.pid'), 'utf8').trim() || 0,
    );
    expect(pid).toBeGreaterThan(0);
    const stopped = await waitFor(
      async () => {
        const i = await show();
        return i?.intended_status === 'stopped' && i?.actual_status === 'stopped' ? i : null;
      },
      'the budget to stop it and the agent to stop its process',
      60_000,
      500,
    );
    expect(stopped.status_msg).toMatch(/month budget/);
    // The agent really ended the instance's processes (its process group is gone).
    await waitFor(
      () => {
        try {
          process.kill(-pid, 0);
          return null;
        } catch {
          return true;
        }
      },
      "the instance's processes to end",
      30_000,
      500,
    );
    // Stopped, not destroyed: it is still listed and can be started once the budget is raised.
    expect(
      (await api('GET', '/api/v0/instances/', owner.team_api_key)).body.instances.map((i: any) => i.id),
    ).toContain(id);
    const again = await api('PUT', `/api/v0/asks/${machine}/`, owner.team_api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
    });
    expect(again.status).toBe(403);
    expect(again.body.limit).toBe('month_budget');

    const db = new Database(path.join(dir, 'openrig.db'), { readonly: true });
    try {
      const mails = db
        .prepare("select to_addr, subject from email_outbox where category like 'budget.%' order by id")
        .all() as { to_addr: string; subject: string }[];
      expect(mails.map((m) => m.to_addr)).toContain('owner@example.com');
      expect(mails.some((m) => /spent its .* budget; its instances are stopped/.test(m.subject))).toBe(true);
    } finally {
      db.close();
    }
  });
});
