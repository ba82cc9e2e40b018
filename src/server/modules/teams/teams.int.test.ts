// Teams on /api/v0/team/: a team's own account and balance, default roles, invitations by e-mail
// (single use, expiring, hashed), members, roles with real permissions checked on every request,
// removed members' keys refused at once, the team's audit log naming the member, races decided by
// the database. Both databases.
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, PUB } from '../../../../test/helpers/market.js';
import { sha256Hex } from '../../crypto.js';
import { INVITE_TTL_DAYS } from './teams.service.js';

/** The token of the newest invitation e-mail to `email`, from the outbox (the link's last segment). */
async function inviteToken(t: TestApp, email: string): Promise<string> {
  const row = await t.deps.db
    .selectFrom('email_outbox')
    .select(['text_body', 'category'])
    .where('to_addr', '=', email)
    .where('category', '=', 'team.invite')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  const m = /\/team\/invite\/([A-Za-z0-9_-]{24,})\s/.exec(row.text_body);
  expect(m, row.text_body).not.toBeNull();
  return m![1]!;
}

describeEachDb('teams', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_PUBLIC_URL: 'https://console.example' });
  const call = (method: string, path: string, key: string, body?: unknown) =>
    t().request(method, `/api/v0${path}`, { key, body });

  /** A team made by a new owner with `usd` moved to it; the owner and the team key. */
  async function newTeam(name: string, usd = 0) {
    const owner = await t().user({ balanceUsd: 100 });
    const r = await call('POST', '/team/', owner.apiKey, { team_name: name, transfer_credit: usd });
    expect(r.status, r.raw).toBe(200);
    return { owner, teamKey: r.body.api_key as string, teamId: r.body.team_id as number };
  }

  /** Invites a new account with `role` and accepts; the member and their team key. */
  async function join(teamKey: string, role: string) {
    const m = await t().user();
    const inv = await t().request(
      'POST',
      `/api/v0/team/invite/?email=${encodeURIComponent(m.email)}&role=${role}`,
      {
        key: teamKey,
      },
    );
    expect(inv.status, inv.raw).toBe(200);
    const token = await inviteToken(t(), m.email);
    const a = await call('POST', `/team/invite/${token}/`, m.apiKey);
    expect(a.status, a.raw).toBe(200);
    return { ...m, teamKey: a.body.api_key as string, token };
  }

  describe('create team', () => {
    it('makes a team with its own account and balance, the default roles, the creator its owner', async () => {
      const { owner, teamKey, teamId } = await newTeam(`lab-${dialect}`, 25);
      const me = await call('GET', '/users/current', owner.apiKey);
      expect(me.body.credit ?? me.body.balance).toBeCloseTo(75, 5);
      const team = await call('GET', '/users/current', teamKey);
      expect(team.status).toBe(200);
      expect(team.body.id).not.toBe(owner.id);
      expect(team.body.credit ?? team.body.balance).toBeCloseTo(25, 5);
      expect(team.body.team_id).toBe(teamId);
      const roles = await call('GET', '/team/roles-full/', teamKey);
      expect(roles.status).toBe(200);
      expect(roles.body.map((r: { name: string }) => r.name)).toEqual(['owner', 'manager', 'member']);
      expect(roles.body[0].permissions.api.team_write).toEqual({});
      expect(roles.body[2].permissions.api.team_write).toBeUndefined();
      expect(roles.body[2].permissions.api.instance_write).toEqual({});
      const members = await call('GET', '/team/members/', teamKey);
      expect(members.body).toEqual([
        expect.objectContaining({ id: owner.id, email: owner.email, roles: ['owner'], is_owner: true }),
      ]);
      // Both ledgers show the move.
      const ledger = await t()
        .deps.db.selectFrom('billing_ledger')
        .select(['user_id', 'amount_micros'])
        .where('kind', '=', 'transfer')
        .where('user_id', 'in', [owner.id, team.body.id])
        .execute();
      expect(ledger.map((l) => [Number(l.user_id), Number(l.amount_micros)]).sort()).toEqual(
        [
          [owner.id, 25_000_000],
          [team.body.id, -25_000_000],
        ].sort(),
      );
    });

    it('refuses a taken name, a transfer the balance does not cover, and a team made from a team; nothing made', async () => {
      const { owner, teamKey } = await newTeam(`taken-${dialect}`);
      const before = await t().deps.db.selectFrom('teams').select('id').execute();
      const dup = await call('POST', '/team/', owner.apiKey, { team_name: `taken-${dialect}` });
      expect(dup.status).toBe(409);
      const poor = await call('POST', '/team/', owner.apiKey, {
        team_name: `poor-${dialect}`,
        transfer_credit: 1000,
      });
      expect(poor.status).toBe(400);
      expect(poor.body.error).toBe('insufficient_balance');
      const nested = await call('POST', '/team/', teamKey, { team_name: `nested-${dialect}` });
      expect(nested.status).toBe(400);
      expect(nested.body.msg).toMatch(/within a team/);
      const bad = await call('POST', '/team/', owner.apiKey, { team_name: '   ' });
      expect(bad.status).toBe(400);
      expect((await t().deps.db.selectFrom('teams').select('id').execute()).length).toBe(before.length);
    });

    it('of concurrent creates of one name exactly one wins; the others make nothing', async () => {
      const users = await Promise.all(Array.from({ length: 5 }, () => t().user({ balanceUsd: 10 })));
      const replies = await Promise.all(
        users.map((u) =>
          call('POST', '/team/', u.apiKey, { team_name: `race-${dialect}`, transfer_credit: 5 }),
        ),
      );
      expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
      expect(replies.filter((r) => r.status === 409)).toHaveLength(4);
      // The losers kept their money: no half-made team moved it.
      const balances = await Promise.all(users.map((u) => call('GET', '/users/current', u.apiKey)));
      expect(balances.map((b) => b.body.balance as number).sort((a, b) => a - b)).toEqual([
        5, 10, 10, 10, 10,
      ]);
    });

    it('a team command with a personal key says to use a team key', async () => {
      const { owner } = await newTeam(`personal-${dialect}`);
      const r = await call('GET', '/team/members/', owner.apiKey);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('team_context_required');
    });
  });

  describe('invitations', () => {
    let teamKey: string;
    let owner: { id: number; email: string; apiKey: string };
    beforeAll(async () => {
      ({ teamKey, owner } = await newTeam(`inv-${dialect}`));
    });

    it('e-mails a single-use link whose token is stored hashed; accepting answers with a team key of the role', async () => {
      const m = await t().user();
      const r = await t().request(
        'POST',
        `/api/v0/team/invite/?email=${encodeURIComponent(m.email.toUpperCase())}&role=member`,
        { key: teamKey },
      );
      expect(r.status, r.raw).toBe(200);
      expect(r.raw).not.toMatch(/invite\/[A-Za-z0-9_-]{24}/);
      const token = await inviteToken(t(), m.email);
      expect(token).toMatch(/^[A-Za-z0-9_-]{24,}$/);
      const mail = await t()
        .deps.db.selectFrom('email_outbox')
        .select('text_body')
        .where('to_addr', '=', m.email)
        .executeTakeFirstOrThrow();
      expect(mail.text_body).toContain(`https://console.example/team/invite/${token}`);
      const stored = await t()
        .deps.db.selectFrom('team_invites')
        .selectAll()
        .where('email', '=', m.email)
        .execute();
      expect(stored).toHaveLength(1);
      expect(stored[0]!.token_hash).toBe(sha256Hex(token));
      expect(JSON.stringify(stored)).not.toContain(token);
      expect(Number(stored[0]!.expires_at) - Number(stored[0]!.created_at)).toBe(
        INVITE_TTL_DAYS * 86_400_000,
      );

      const shown = await call('GET', `/team/invite/${token}/`, m.apiKey);
      expect(shown.body).toMatchObject({ team_name: `inv-${dialect}`, role: 'member', for_you: true });
      const a = await call('POST', `/team/invite/${token}/`, m.apiKey);
      expect(a.status, a.raw).toBe(200);
      expect(a.body).toMatchObject({ success: true, team_name: `inv-${dialect}`, role: 'member' });
      const again = await call('POST', `/team/invite/${token}/`, m.apiKey);
      expect(again.status).toBe(410);
      expect(again.body.error).toBe('invite_expired');
      const members = await call('GET', '/team/members/', a.body.api_key);
      expect(members.status).toBe(200);
      expect(members.body.find((x: { id: number }) => x.id === m.id)).toMatchObject({ roles: ['member'] });
    });

    it('a second invite of a member, or of the owner, is a clear 400; an unknown role too', async () => {
      const m = await join(teamKey, 'member');
      for (const email of [m.email, owner.email]) {
        const r = await t().request('POST', '/api/v0/team/invite/', {
          key: teamKey,
          body: { email, role: 'member' },
        });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('already_member');
      }
      const r = await t().request('POST', '/api/v0/team/invite/?email=x@example.com&role=nope', {
        key: teamKey,
      });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('no_such_role');
      const o = await t().request('POST', '/api/v0/team/invite/?email=x@example.com&role=owner', {
        key: teamKey,
      });
      expect(o.status).toBe(400);
    });

    it('an expired link is refused; a link is for the address it was sent to', async () => {
      const m = await t().user();
      const other = await t().user();
      await t().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.email)}&role=member`, {
        key: teamKey,
      });
      const token = await inviteToken(t(), m.email);
      const wrong = await call('POST', `/team/invite/${token}/`, other.apiKey);
      expect(wrong.status).toBe(403);
      t().clock.advance(INVITE_TTL_DAYS * 86_400_000 + 1);
      const late = await call('POST', `/team/invite/${token}/`, m.apiKey);
      expect(late.status).toBe(410);
      const garbage = await call('POST', `/team/invite/${'x'.repeat(48)}/`, m.apiKey);
      expect(garbage.status).toBe(410);
    });

    it('of concurrent accepts of one link exactly one wins', async () => {
      const m = await t().user();
      await t().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.email)}&role=member`, {
        key: teamKey,
      });
      const token = await inviteToken(t(), m.email);
      const replies = await Promise.all(
        Array.from({ length: 6 }, () => call('POST', `/team/invite/${token}/`, m.apiKey)),
      );
      expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
      expect(replies.every((r) => r.status === 200 || (r.status >= 400 && r.status < 500))).toBe(true);
      const keys = await t()
        .deps.db.selectFrom('api_keys')
        .select('id')
        .where('user_id', '=', m.id)
        .where('team_id', 'is not', null)
        .execute();
      expect(keys).toHaveLength(1);
    });
  });

  describe('roles with real permissions', () => {
    let teamKey: string;
    let machine: number;
    beforeAll(async () => {
      ({ teamKey } = await newTeam(`roles-${dialect}`, 50));
      machine = (await offers(t(), 1))[0]!;
      expect((await call('POST', '/ssh/', teamKey, { ssh_key: PUB })).status).toBe(200);
    });

    it('create, show, update by id, remove by name', async () => {
      const c = await call('POST', '/team/roles/', teamKey, {
        name: 'Data Viewer',
        permissions: { api: { instance_read: {}, team_read: {} } },
      });
      expect(c.status, c.raw).toBe(200);
      expect(c.body).toMatchObject({ name: 'Data Viewer', identifier: 'data_viewer' });
      const s = await call('GET', '/team/roles/Data%20Viewer/', teamKey);
      expect(s.body).toMatchObject({
        id: c.body.id,
        permissions: { api: { instance_read: {}, team_read: {} } },
      });
      const u = await call('PUT', `/team/roles/${c.body.id}/`, teamKey, {
        name: 'viewer2',
        permissions: { api: { instance_read: {} } },
      });
      expect(u.status, u.raw).toBe(200);
      expect((await call('GET', '/team/roles/viewer2/', teamKey)).body.permissions).toEqual({
        api: { instance_read: {} },
      });
      expect((await call('DELETE', '/team/roles/viewer2/', teamKey)).status).toBe(200);
      expect((await call('GET', '/team/roles/viewer2/', teamKey)).status).toBe(404);
      expect((await call('DELETE', '/team/roles/owner/', teamKey)).status).toBe(400);
      const bad = await call('POST', '/team/roles/', teamKey, {
        name: 'x',
        permissions: { api: { gpu_write: {} } },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.msg).toContain('gpu_write');
      const dup = await call('POST', '/team/roles/', teamKey, { name: 'member', permissions: { api: {} } });
      expect(dup.status).toBe(409);
    });

    it('a member with a read-only role is refused an instance create and told why; a member creates', async () => {
      const ro = await call('POST', '/team/roles/', teamKey, {
        name: 'readonly',
        permissions: { api: { instance_read: {}, team_read: {} } },
      });
      expect(ro.status).toBe(200);
      const viewer = await join(teamKey, 'readonly');
      const refused = await call('PUT', `/asks/${machine}/`, viewer.teamKey, { image: 'x', disk: 10 });
      expect(refused.status).toBe(403);
      expect(refused.body.msg).toBe(
        `Your role "readonly" in team "roles-${dialect}" lacks write permission on instances`,
      );
      expect((await call('GET', '/instances/', viewer.teamKey)).status).toBe(200);
      // Nor can it grant itself more: inviting, or making a wider role.
      const inv = await t().request('POST', '/api/v0/team/invite/?email=z@example.com&role=member', {
        key: viewer.teamKey,
      });
      expect(inv.status).toBe(403);

      const member = await join(teamKey, 'member');
      const made = await call('PUT', `/asks/${machine}/`, member.teamKey, { image: 'x', disk: 10 });
      expect(made.status, made.raw).toBe(200);
      // The instance is the team's: its account owns it, every member sees it.
      const mine = await call('GET', '/instances/', viewer.teamKey);
      expect(mine.body.instances.map((i: { id: number }) => i.id)).toContain(made.body.new_contract);
      const personal = await call('GET', '/instances/', member.apiKey);
      expect(personal.body.instances.map((i: { id: number }) => i.id)).not.toContain(made.body.new_contract);
    });

    it("narrowing a role revokes its members' team keys; a widened one keeps them", async () => {
      const r = await call('POST', '/team/roles/', teamKey, {
        name: 'narrowing',
        permissions: { api: { instance_read: {}, instance_write: {}, team_read: {} } },
      });
      const m = await join(teamKey, 'narrowing');
      expect((await call('GET', '/team/members/', m.teamKey)).status).toBe(200);
      // Widened (a permission more): the key lives on.
      const wide = await call('PUT', `/team/roles/${r.body.id}/`, teamKey, {
        permissions: { api: { instance_read: {}, instance_write: {}, team_read: {}, billing_read: {} } },
      });
      expect(wide.status, wide.raw).toBe(200);
      expect(wide.body.revoked_keys).toBe(0);
      expect((await call('GET', '/team/members/', m.teamKey)).status).toBe(200);
      // Narrowed: the member's team key dies at once, and says so on its next request.
      const narrow = await call('PUT', `/team/roles/${r.body.id}/`, teamKey, {
        permissions: { api: { instance_read: {} } },
      });
      expect(narrow.status, narrow.raw).toBe(200);
      expect(narrow.body.revoked_keys).toBe(1);
      expect((await call('GET', '/team/members/', m.teamKey)).status).toBe(401);
      expect((await call('GET', '/instances/', m.teamKey)).status).toBe(401);
      // The owner's own key is untouched.
      expect((await call('GET', '/team/members/', teamKey)).status).toBe(200);
      // A role in use is not removed.
      const del = await call('DELETE', '/team/roles/narrowing/', teamKey);
      expect(del.status).toBe(400);
      expect(del.body.error).toBe('role_in_use');
    });

    it("a removed member's team key is refused on its next request; the owner is never removed", async () => {
      const m = await join(teamKey, 'member');
      expect((await call('GET', '/instances/', m.teamKey)).status).toBe(200);
      const rm = await call('DELETE', `/team/members/${m.id}/`, teamKey);
      expect(rm.status, rm.raw).toBe(200);
      const next = await call('GET', '/instances/', m.teamKey);
      expect(next.status).toBe(401);
      // Their own key still works, for their own account.
      expect((await call('GET', '/users/current', m.apiKey)).body.id).toBe(m.id);
      const members = await call('GET', '/team/members/', teamKey);
      const owner = members.body.find((x: { is_owner: boolean }) => x.is_owner);
      const o = await call('DELETE', `/team/members/${owner.id}/`, teamKey);
      expect(o.status).toBe(400);
      expect(o.body.error).toBe('owner_fixed');
    });

    it("every team write is in the team's audit log with the member who made it", async () => {
      const m = await join(teamKey, 'member');
      expect(
        (await call('POST', '/ssh/', m.teamKey, { ssh_key: PUB.replace('renter', 'x') })).status,
      ).toBeLessThan(500);
      // The rows are written after the replies, in batches (audit.service.ts).
      await new Promise((r) => setTimeout(r, 300));
      await Promise.all([...t().deps.auditWrites.pending]);
      const account = (await call('GET', '/users/current', teamKey)).body.id as number;
      const rows = await t()
        .deps.db.selectFrom('audit_logs')
        .select(['user_id', 'member_id', 'route'])
        .where('user_id', '=', account)
        .execute();
      expect(rows.some((r) => Number(r.member_id) === m.id && r.route.startsWith('/api/v0/ssh'))).toBe(true);
      // Joining is in the team's log too, made from the member's own account.
      expect(
        rows.some((r) => Number(r.member_id) === m.id && r.route.startsWith('/api/v0/team/invite/')),
      ).toBe(true);
    });
  });

  describe('the console: a session switched to a team', () => {
    it("acts as the team within the role; a removed member's session goes back to their own account", async () => {
      const { teamKey, teamId } = await newTeam(`console-${dialect}`, 3);
      const m = await join(teamKey, 'member');
      // A cookie session of the member, as a password login makes one.
      const cookieOf = async (email: string) => {
        const r = await t().request('POST', '/api/v0/users/login/', {
          body: { email, password: 'a long enough password' },
        });
        expect(r.status, r.raw).toBe(200);
        return /openrig_session=[^;]+/.exec(String(r.headers['set-cookie']))![0];
      };
      const member = await t().user({ password: 'a long enough password' });
      await t().request(
        'POST',
        `/api/v0/team/invite/?email=${encodeURIComponent(member.email)}&role=member`,
        {
          key: teamKey,
        },
      );
      await call('POST', `/team/invite/${await inviteToken(t(), member.email)}/`, member.apiKey);
      const cookie = await cookieOf(member.email);
      const headers = { cookie, 'x-openrig-csrf': '1' };
      const mine = await t().request('GET', '/api/v0/team/mine/', { headers });
      expect(mine.body).toMatchObject({ current: null, teams: [{ id: teamId, role: 'member' }] });
      const sw = await t().request('POST', '/api/v0/team/switch/', { headers, body: { team_id: teamId } });
      expect(sw.status, sw.raw).toBe(200);
      const asTeam = await t().request('GET', '/api/v0/users/current', { headers });
      expect(asTeam.body.balance).toBeCloseTo(3, 5);
      expect(asTeam.body.team_id).toBe(teamId);
      // The member role does not write the team.
      const inv = await t().request('POST', '/api/v0/team/invite/', {
        headers,
        body: { email: 'x@example.com', role: 'member' },
      });
      expect(inv.status).toBe(403);
      expect(inv.body.msg).toContain('"member"');
      // An API key cannot switch: its team is fixed.
      expect((await call('POST', '/team/switch/', m.teamKey, { team_id: null })).status).toBe(400);
      // Not a member: no switch.
      const other = await newTeam(`console-other-${dialect}`);
      const no = await t().request('POST', '/api/v0/team/switch/', {
        headers,
        body: { team_id: other.teamId },
      });
      expect(no.status).toBe(404);
      // Removed: the session is the member's own account again on its next request.
      expect((await call('DELETE', `/team/members/${member.id}/`, teamKey)).status).toBe(200);
      const home = await t().request('GET', '/api/v0/users/current', { headers });
      expect(home.status).toBe(200);
      expect(home.body.id).toBe(member.id);
      expect(home.body.team_id).toBeNull();
    });
  });

  describe('destroy team', () => {
    it('only the owner destroys it; its keys stop, its balance returns to the owner, the name is free', async () => {
      const { owner, teamKey } = await newTeam(`gone-${dialect}`, 10);
      const m = await join(teamKey, 'manager');
      const notOwner = await call('DELETE', '/team/', m.teamKey);
      expect(notOwner.status).toBe(403);
      const d = await call('DELETE', '/team/', teamKey);
      expect(d.status, d.raw).toBe(200);
      expect((await call('GET', '/users/current', teamKey)).status).toBe(401);
      expect((await call('GET', '/users/current', m.teamKey)).status).toBe(401);
      const me = await call('GET', '/users/current', owner.apiKey);
      expect(me.body.credit ?? me.body.balance).toBeCloseTo(100, 5);
      expect((await call('POST', '/team/', owner.apiKey, { team_name: `gone-${dialect}` })).status).toBe(200);
    });
  });
});
