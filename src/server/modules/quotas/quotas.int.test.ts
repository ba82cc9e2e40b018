// Quotas and budgets through the API, on both databases: who sets limits, a create over a GPU,
// $/hour, month-budget or API-key limit refused with 403 quota_exceeded and its numbers, the
// budget check's warnings (once per month) and its stop at 100 % (never a destroy).
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { agentMachine, offers, PUB, renter } from '../../../../test/helpers/market.js';
import { addCredit, runMeter } from '../billing/billing.service.js';
import { reportInstanceStatus } from '../instances/instances.moves.js';
import { runBudgetCheck } from './quotas.budget.js';
import { runVolumeMeter } from '../volumes/volumes.billing.js';

const MID_MONTH = Date.UTC(2026, 10, 10, 12, 0, 0);
let teamN = 0;

/**
 * A team (its first member its owner) with a second member, each with a team key; the team's
 * account has an SSH key and $1,000. Owner and member have SSH keys and $100 of their own too.
 */
async function team(t: TestApp) {
  const name = `team-${++teamN}-${Date.now()}`;
  const owner = await renter(t, { team: name });
  const member = await renter(t, { team: name });
  const row = await t.deps.db
    .selectFrom('teams')
    .select(['id', 'account_user_id'])
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  await addCredit(t.deps, Number(row.account_user_id), 1000);
  const ssh = await t.request('POST', '/api/v0/ssh/', { key: owner.teamApiKey, body: { ssh_key: PUB } });
  expect(ssh.status, ssh.raw).toBe(200);
  return { teamId: Number(row.id), account: Number(row.account_user_id), owner, member };
}

const create = (t: TestApp, key: string, offer: number) =>
  t.request('PUT', `/api/v0/asks/${offer}/`, { key, body: { image: 'x', disk: 10 } });

describeEachDb('quotas', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });
  beforeAll(() => t().clock.set(MID_MONTH));

  describe('who sets limits', () => {
    it('an owner sets and reads them; a member reads but may not set; an outsider sees no team', async () => {
      const { teamId, owner, member } = await team(t());
      const set = await t().request('PUT', '/api/v0/quotas/', {
        key: owner.teamApiKey,
        body: { max_gpus: 4, max_dph: 3.5, month_budget: 100 },
      });
      expect(set.status, set.raw).toBe(200);
      expect(set.body.team).toMatchObject({ max_gpus: 4, max_dph: 3.5, month_budget: 100, running_gpus: 0 });
      expect(set.body.can_manage).toBe(true);
      const mine = await t().request('PUT', '/api/v0/quotas/', {
        key: owner.apiKey,
        body: { team_id: teamId, email: member.email, max_gpus: 1 },
      });
      expect(mine.status, mine.raw).toBe(200);
      expect(mine.body.members.find((m: any) => m.user_id === member.id)).toMatchObject({
        max_gpus: 1,
        max_dph: null,
      });

      const read = await t().request('GET', '/api/v0/quotas/', { key: member.teamApiKey });
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ team_id: teamId, can_manage: false, team: { max_gpus: 4 } });
      const refused = await t().request('PUT', '/api/v0/quotas/', {
        key: member.teamApiKey,
        body: { max_gpus: 99 },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('forbidden');

      const outsider = await renter(t());
      const none = await t().request('GET', `/api/v0/quotas/?team_id=${teamId}`, { key: outsider.apiKey });
      expect(none.status).toBe(404);
      // null clears one limit; the others stay.
      const cleared = await t().request('PUT', '/api/v0/quotas/', {
        key: owner.teamApiKey,
        body: { max_dph: null },
      });
      expect(cleared.body.team).toMatchObject({ max_gpus: 4, max_dph: null, month_budget: 100 });
      const gone = await t().request('DELETE', '/api/v0/quotas/', { key: owner.teamApiKey, body: {} });
      expect(gone.body.team).toMatchObject({ max_gpus: null, max_dph: null, month_budget: null });
    });
  });

  describe('limits at create', () => {
    it("a member over their GPU cap is refused with the limit and the numbers; the team's other members are not", async () => {
      const { teamId, owner, member } = await team(t());
      await t().request('PUT', '/api/v0/quotas/', {
        key: owner.teamApiKey,
        body: { user_id: member.id, max_gpus: 2 },
      });
      const [a, b] = await offers(t(), 2, { numGpus: 2 });
      expect((await create(t(), member.teamApiKey!, a!)).status).toBe(200);
      const over = await create(t(), member.teamApiKey!, b!);
      expect(over.status, over.raw).toBe(403);
      expect(over.body).toMatchObject({
        error: 'quota_exceeded',
        success: false,
        scope: 'member',
        limit: 'max_gpus',
        limit_value: 2,
        current: 2,
        requested: 2,
        team_id: teamId,
        user_id: member.id,
      });
      expect(over.body.msg).toMatch(/at most 2 GPUs running at once; 2 run now and this create needs 2/);
      // Nothing of the refused create stays: the offer is free for the owner.
      expect((await create(t(), owner.teamApiKey!, b!)).status).toBe(200);
    });

    it("a team's $/hour limit counts every member's instances; a personal create is not the team's", async () => {
      const { owner, member } = await team(t());
      await t().request('PUT', '/api/v0/quotas/', { key: owner.teamApiKey, body: { max_dph: 1.2 } });
      const ids = await offers(t(), 3, { priceGpu: 0.5, priceDisk: 0 });
      expect((await create(t(), owner.teamApiKey!, ids[0]!)).status).toBe(200);
      expect((await create(t(), member.teamApiKey!, ids[1]!)).status).toBe(200);
      const over = await create(t(), member.teamApiKey!, ids[2]!);
      expect(over.status).toBe(403);
      expect(over.body).toMatchObject({
        scope: 'team',
        limit: 'max_dph',
        limit_value: 1.2,
        current: 1,
        requested: 0.5,
      });
      // The member's own account (no team context) is outside the team's limits.
      expect((await create(t(), member.apiKey, ids[2]!)).status).toBe(200);
    });

    it('a destroyed instance no longer counts', async () => {
      const { owner } = await team(t());
      await t().request('PUT', '/api/v0/quotas/', { key: owner.teamApiKey, body: { max_gpus: 1 } });
      const [a, b] = await offers(t(), 2);
      const first = await create(t(), owner.teamApiKey!, a!);
      expect((await create(t(), owner.teamApiKey!, b!)).status).toBe(403);
      const del = await t().request('DELETE', `/api/v0/instances/${first.body.new_contract}/`, {
        key: owner.teamApiKey,
        body: {},
      });
      expect(del.status).toBe(200);
      expect((await create(t(), owner.teamApiKey!, b!)).status).toBe(200);
    });
  });

  describe('starting a stopped instance', () => {
    it('counts against the limits as a create does: refused over the cap, taken once there is room', async () => {
      const { owner } = await team(t());
      const [a, b] = await offers(t(), 2);
      const first = await create(t(), owner.teamApiKey!, a!);
      const second = await create(t(), owner.teamApiKey!, b!);
      expect([first.status, second.status]).toEqual([200, 200]);
      const state = (id: number, want: 'running' | 'stopped') =>
        t().request('PUT', `/api/v0/instances/${id}/`, { key: owner.teamApiKey, body: { state: want } });
      expect((await state(second.body.new_contract, 'stopped')).status).toBe(200);
      // One GPU at most, while the first runs: the stopped one may not start.
      const set = await t().request('PUT', '/api/v0/quotas/', {
        key: owner.teamApiKey,
        body: { max_gpus: 1 },
      });
      expect(set.status, set.raw).toBe(200);
      const over = await state(second.body.new_contract, 'running');
      expect(over.status, over.raw).toBe(403);
      expect(over.body).toMatchObject({
        error: 'quota_exceeded',
        scope: 'team',
        limit: 'max_gpus',
        current: 1,
      });
      const row = await t()
        .deps.db.selectFrom('instances')
        .select(['intended_status'])
        .where('id', '=', second.body.new_contract)
        .executeTakeFirstOrThrow();
      expect(row.intended_status).toBe('stopped');
      // The first stopped: there is room again.
      expect((await state(first.body.new_contract, 'stopped')).status).toBe(200);
      expect((await state(second.body.new_contract, 'running')).status).toBe(200);
    });
  });

  describe('month budgets', () => {
    it('warns once at 80 %, stops the instances at 100 % and refuses creates, warning once more', async () => {
      const { teamId, owner, member } = await team(t());
      // $1/hour: $8 after 8 hours (80 % of 10), $10 after 10.
      const [a, b, c] = await offers(t(), 3, { priceGpu: 1, priceDisk: 0 });
      const inst = await create(t(), member.teamApiKey!, a!);
      expect(inst.status).toBe(200);
      const id = inst.body.new_contract as number;
      await reportInstanceStatus(t().deps, id, 'running');
      await t().request('PUT', '/api/v0/quotas/', { key: owner.teamApiKey, body: { month_budget: 10 } });

      t().clock.advance(8 * 3600_000);
      await runMeter(t().deps);
      const warn = await runBudgetCheck(t().deps);
      expect(warn.alerts).toBe(1);
      expect(warn.stopped).toEqual([]);
      expect((await runBudgetCheck(t().deps)).alerts).toBe(0);
      const mails80 = await t()
        .deps.db.selectFrom('email_outbox')
        .select(['to_addr', 'subject'])
        .where('category', '=', 'budget.80')
        .where('idempotency_key', 'like', `budget:team:${teamId}:%`)
        .execute();
      expect(mails80.map((m) => m.to_addr)).toEqual([owner.email]);
      expect(mails80[0]!.subject).toMatch(/80 %/);

      t().clock.advance(2 * 3600_000);
      await runMeter(t().deps);
      const full = await runBudgetCheck(t().deps);
      expect(full.alerts).toBe(1);
      expect(full.stopped).toEqual([id]);
      const row = await t()
        .deps.db.selectFrom('instances')
        .select(['intended_status', 'destroyed_at', 'status_msg'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ intended_status: 'stopped', destroyed_at: null });
      expect(row.status_msg).toMatch(/month budget/);
      const refused = await create(t(), owner.teamApiKey!, b!);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({
        scope: 'team',
        limit: 'month_budget',
        limit_value: 10,
        current: 10,
      });
      // Outside the team the owner still rents.
      expect((await create(t(), owner.apiKey, c!)).status).toBe(200);
      expect((await runBudgetCheck(t().deps)).alerts).toBe(0);
      const events = await t()
        .deps.db.selectFrom('events')
        .select(['type', 'data'])
        .where('user_id', '=', owner.id)
        .where('type', 'like', 'budget.%')
        .orderBy('seq')
        .execute();
      expect(events.map((e) => e.type)).toEqual(['budget.warning', 'budget.exhausted']);
      expect(JSON.parse(events[1]!.data)).toMatchObject({
        scope: 'team',
        team_id: teamId,
        budget: 10,
        percent: 100,
        stopped_instances: [id],
      });
    });

    it("the team's volumes count toward its month budget", async () => {
      const { owner } = await team(t());
      const host = await t().user();
      const reg = await t().request('POST', '/api/agent/v1/register', {
        key: host.apiKey,
        body: { agent_uid: `agent-quota-vol-${teamN}`, machines: [agentMachine(0)], price_gpu: 0.4 },
      });
      const machine = reg.body.machines[0].machine_id as number;
      // $7.20/GB-month × 100 GB = $1 an hour.
      const ask = await t().request('POST', '/api/v0/volumes/', {
        key: host.apiKey,
        body: { size: 200, machine, price_disk: 7.2 },
      });
      expect(ask.status, ask.raw).toBe(200);
      const vol = await t().request('PUT', '/api/v0/volumes/', {
        key: owner.teamApiKey,
        body: { size: 100, id: ask.body.volume_asks[0].id },
      });
      expect(vol.status, vol.raw).toBe(200);
      await t().request('PUT', '/api/v0/quotas/', { key: owner.teamApiKey, body: { month_budget: 10 } });
      // A personal volume of the owner's is not the team's.
      expect(
        (
          await t().request('PUT', '/api/v0/volumes/', {
            key: owner.apiKey,
            body: { size: 100, id: ask.body.volume_asks[0].id },
          })
        ).status,
      ).toBe(200);
      t().clock.advance(10 * 3600_000);
      await runVolumeMeter(t().deps);
      const [offer] = await offers(t(), 1, { priceGpu: 1, priceDisk: 0 });
      const refused = await create(t(), owner.teamApiKey!, offer!);
      expect(refused.status, refused.raw).toBe(403);
      expect(refused.body).toMatchObject({
        scope: 'team',
        limit: 'month_budget',
        limit_value: 10,
        current: 10,
      });
      // The owner's personal volume was charged too, but not against the team.
      expect((await create(t(), owner.apiKey, offer!)).status).toBe(200);
    });

    it("an API key's budget refuses its creates once its instances spent it, and stops them", async () => {
      const u = await renter(t());
      const keys = await t().request('GET', '/api/v0/quotas/keys/', { key: u.apiKey });
      expect(keys.status).toBe(200);
      const keyId = keys.body.keys[0].api_key_id as number;
      const set = await t().request('PUT', `/api/v0/quotas/keys/${keyId}/`, {
        key: u.apiKey,
        body: { month_budget: 2 },
      });
      expect(set.status, set.raw).toBe(200);
      expect(set.body.keys[0]).toMatchObject({ api_key_id: keyId, month_budget: 2, month_spend: 0 });
      const [a, b] = await offers(t(), 2, { priceGpu: 1, priceDisk: 0 });
      const inst = await create(t(), u.apiKey, a!);
      expect(inst.status).toBe(200);
      await reportInstanceStatus(t().deps, inst.body.new_contract, 'running');
      t().clock.advance(2 * 3600_000);
      await runMeter(t().deps);
      const r = await runBudgetCheck(t().deps);
      expect(r.stopped).toContain(inst.body.new_contract);
      const refused = await create(t(), u.apiKey, b!);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({
        scope: 'api_key',
        limit: 'month_budget',
        api_key_id: keyId,
        limit_value: 2,
      });
      const after = await t().request('GET', '/api/v0/quotas/keys/', { key: u.apiKey });
      expect(after.body.keys[0].month_spend).toBeCloseTo(2, 6);
      const other = await t().request('PUT', `/api/v0/quotas/keys/999999/`, {
        key: u.apiKey,
        body: { month_budget: 1 },
      });
      expect(other.status).toBe(404);
    });
  });
});
