// The official CLI's team commands, each request exactly as the CLI sends it, each followed by
// the read that shows what it did: create team, invite member (query string, empty body), show
// members, remove member, create team-role, show team-role, show team-roles, update team-role,
// remove team-role, destroy team (docs/compatibility.md, docs/teams.md).
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp, type TestApp } from '../helpers/app.js';
import { cli, expectOk, f } from './official-cli.js';

async function inviteToken(t: TestApp, email: string): Promise<string> {
  const row = await t.deps.db
    .selectFrom('email_outbox')
    .select('text_body')
    .where('to_addr', '=', email)
    .where('category', '=', 'team.invite')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  return /\/team\/invite\/([A-Za-z0-9_-]{24,})\s/.exec(row.text_body)![1]!;
}

describeEachDb('official CLI: teams, members and team roles', (dialect) => {
  const t = useTestApp(dialect);

  it('create team, invite member, show members, remove member, the team-role commands, destroy team', async () => {
    const owner = await t().user({ balanceUsd: 50 });
    const invitee = await t().user();

    // create team --team-name lab --transfer-credit 20
    const made = await cli(t(), {
      method: 'POST',
      path: '/team/',
      key: owner.apiKey,
      json: { team_name: `lab-${dialect}`, transfer_credit: f(20) },
    });
    expectOk(made);
    expect(made.body).toMatchObject({ success: true, team_name: `lab-${dialect}`, role: 'owner' });
    const key = made.body.api_key as string;
    const team = await cli(t(), { method: 'GET', path: '/users/current', key });
    expect(team.body.credit).toBeCloseTo(20, 5);

    // create team without --transfer-credit sends null
    const bare = await cli(t(), {
      method: 'POST',
      path: '/team/',
      key: owner.apiKey,
      json: { team_name: `lab2-${dialect}`, transfer_credit: null },
    });
    expectOk(bare);

    // invite member --email E --role member: the query string, no body
    const inv = await cli(t(), {
      method: 'POST',
      path: '/team/invite/',
      query: { email: invitee.email, role: 'member' },
      key,
    });
    expectOk(inv);
    const token = await inviteToken(t(), invitee.email);
    const accepted = await cli(t(), {
      method: 'POST',
      path: `/team/invite/${token}/`,
      key: invitee.apiKey,
      json: {},
    });
    expectOk(accepted);

    // show members
    const members = await cli(t(), { method: 'GET', path: '/team/members/', key });
    expectOk(members);
    expect(Array.isArray(members.body)).toBe(true);
    for (const m of members.body)
      expect(Object.keys(m)).toEqual(
        expect.arrayContaining(['id', 'username', 'email', 'fullname', 'roles']),
      );
    expect(members.body.map((m: { email: string; roles: string[] }) => [m.email, m.roles])).toEqual([
      [owner.email, ['owner']],
      [invitee.email, ['member']],
    ]);
    // a second invite of a member, or of the owner, is a clear 400
    for (const email of [invitee.email, owner.email]) {
      const again = await cli(t(), {
        method: 'POST',
        path: '/team/invite/',
        query: { email, role: 'member' },
        key,
      });
      expect(again.status).toBe(400);
      expect(again.body.msg).toMatch(/member of the team already|owner/);
    }

    // create team-role --name viewer --permissions FILE
    const role = await cli(t(), {
      method: 'POST',
      path: '/team/roles/',
      key,
      json: { name: 'viewer', permissions: { api: { instance_read: {}, team_read: {} } } },
    });
    expectOk(role);
    // show team-role viewer: the name in the path
    const shown = await cli(t(), { method: 'GET', path: '/team/roles/viewer/', key });
    expectOk(shown);
    expect(shown.body).toMatchObject({
      name: 'viewer',
      permissions: { api: { instance_read: {}, team_read: {} } },
    });
    // show team-roles
    const all = await cli(t(), { method: 'GET', path: '/team/roles-full/', key });
    expectOk(all);
    for (const r of all.body)
      expect(Object.keys(r)).toEqual(expect.arrayContaining(['id', 'name', 'identifier', 'permissions']));
    expect(all.body.map((r: { name: string }) => r.name)).toEqual(['owner', 'manager', 'member', 'viewer']);
    // update team-role ID --name watcher --permissions FILE: the numeric id in the path
    const upd = await cli(t(), {
      method: 'PUT',
      path: `/team/roles/${role.body.id}/`,
      key,
      json: { name: 'watcher', permissions: { api: { instance_read: {} } } },
    });
    expectOk(upd);
    const after = await cli(t(), { method: 'GET', path: '/team/roles/watcher/', key });
    expect(after.body.permissions).toEqual({ api: { instance_read: {} } });
    // remove team-role watcher
    const rmRole = await cli(t(), { method: 'DELETE', path: '/team/roles/watcher/', key, json: {} });
    expectOk(rmRole);
    expect((await cli(t(), { method: 'GET', path: '/team/roles/watcher/', key })).status).toBe(404);

    // remove member ID
    const rm = await cli(t(), { method: 'DELETE', path: `/team/members/${invitee.id}/`, key, json: {} });
    expectOk(rm);
    const left = await cli(t(), { method: 'GET', path: '/team/members/', key });
    expect(left.body.map((m: { id: number }) => m.id)).toEqual([owner.id]);
    expect(
      (await cli(t(), { method: 'GET', path: '/users/current', key: accepted.body.api_key })).status,
    ).toBe(401);

    // destroy team
    const gone = await cli(t(), { method: 'DELETE', path: '/team/', key, json: {} });
    expectOk(gone);
    expect((await cli(t(), { method: 'GET', path: '/team/members/', key })).status).toBe(401);
    const back = await cli(t(), { method: 'GET', path: '/users/current', key: owner.apiKey });
    expect(back.body.credit).toBeCloseTo(50, 5);
  });

  it('invite member also takes a JSON body {email, role}', async () => {
    const owner = await t().user();
    const made = await cli(t(), {
      method: 'POST',
      path: '/team/',
      key: owner.apiKey,
      json: { team_name: `json-${dialect}`, transfer_credit: null },
    });
    const other = await t().user();
    const inv = await cli(t(), {
      method: 'POST',
      path: '/team/invite/',
      key: made.body.api_key,
      json: { email: other.email, role: 'manager' },
    });
    expectOk(inv);
    expect(await inviteToken(t(), other.email)).toMatch(/^[A-Za-z0-9_-]{24,}$/);
  });
});
