// `openrig team …` (docs/teams.md): create and destroy a team, invite members and accept an
// invitation, list and remove members, change a member's role, and the team's roles. Team
// commands act for the team of the key given (a team key, printed by `team create` and `team
// accept`); `team create`, `team accept` and `team list` take your own key.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { table } from '../output.js';
import { act, common, UsageError, type Ctx, type OptValue } from './context.js';

const V0 = '/api/v0';

interface Member {
  id: number;
  email: string;
  fullname?: string;
  roles?: string[];
  is_owner?: boolean;
}
interface Role {
  id: number;
  name: string;
  permissions?: unknown;
  members?: number;
}

function say(ctx: Ctx, msg: unknown, fallback: string): void {
  if (ctx.raw) return ctx.printRaw();
  ctx.out(`${typeof msg === 'string' && msg !== '' ? msg : fallback}\n`);
}

/** The permissions of --permissions: a file holding JSON (`{"api": {…}}`), or the JSON itself. */
function permissionsArg(v: OptValue): unknown {
  if (typeof v !== 'string' || v === '') throw new UsageError('--permissions FILE is required');
  const text = v.trim().startsWith('{') ? v : readFileSync(v, 'utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UsageError(`--permissions: ${v} does not hold JSON`);
  }
}

function idArg(v: OptValue, what: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${what} must be a positive integer`);
  return n;
}

/** The team's API key a reply holds, printed with what to do with it. */
function printKey(ctx: Ctx, r: { msg?: string; api_key?: string; team_name?: string }): void {
  if (ctx.raw) return ctx.printRaw();
  ctx.out(`${r.msg ?? ''}\nTeam API key (shown once): ${r.api_key}\n`);
  ctx.out(`Use it to act for ${r.team_name}: openrig team members --api-key ${r.api_key?.slice(0, 6)}…\n`);
}

export function registerTeamCommands(team: Command): void {
  common(
    team
      .command('create')
      .argument('<name>', "the team's name")
      .option('--transfer-credit <usd>', 'dollars of your balance to move to the team')
      .description('create a team (its own account and balance); you are its owner; prints a team API key'),
    'openrig team create lab --transfer-credit 25',
  ).action(
    act(async (ctx, [name], o) => {
      const credit = o.transferCredit === undefined ? null : Number(o.transferCredit);
      if (credit !== null && !Number.isFinite(credit))
        throw new UsageError('--transfer-credit must be a number');
      printKey(
        ctx,
        await ctx.client.request('POST', `${V0}/team/`, {
          body: { team_name: name, transfer_credit: credit },
        }),
      );
    }),
  );
  common(
    team.command('destroy').description("destroy the key's team (its owner; no instances left)"),
    'openrig team destroy --api-key TEAM_KEY',
  ).action(
    act(async (ctx) => {
      const r = await ctx.client.request<{ msg?: string }>('DELETE', `${V0}/team/`, { body: {} });
      say(ctx, r.msg, 'Team destroyed');
    }),
  );
  common(
    team
      .command('invite')
      .argument('<email>', "the invitee's e-mail address")
      .requiredOption('--role <role>', 'the role they get (member, manager, or one of the team)')
      .description('e-mail an invitation to join the team (a single-use link that expires in 7 days)'),
    'openrig team invite ana@lab.example --role member',
  ).action(
    act(async (ctx, [email], o) => {
      const r = await ctx.client.request<{ msg?: string }>('POST', `${V0}/team/invite/`, {
        query: { email: String(email), role: String(o.role) },
      });
      say(ctx, r.msg, `Invitation sent to ${String(email)}`);
    }),
  );
  common(
    team
      .command('accept')
      .argument('<token>', "the invitation link's last part (or the whole link)")
      .description('accept an invitation with your own key; prints your team API key'),
    'openrig team accept https://console.example/team/invite/Xy…',
  ).action(
    act(async (ctx, [token]) => {
      const t = String(token).replace(/\/+$/, '').split('/').pop()!;
      printKey(
        ctx,
        await ctx.client.request('POST', `${V0}/team/invite/${encodeURIComponent(t)}/`, { body: {} }),
      );
    }),
  );
  common(
    team.command('members').description("list the team's members and their roles"),
    'openrig team members',
  ).action(
    act(async (ctx) => {
      const rows = await ctx.client.request<Member[]>('GET', `${V0}/team/members/`);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        table(
          rows,
          [
            { header: 'ID', get: (m) => String(m.id) },
            { header: 'E-mail', get: (m) => m.email },
            { header: 'Name', get: (m) => m.fullname ?? '' },
            { header: 'Role', get: (m) => (m.roles ?? []).join(',') + (m.is_owner ? ' (owner)' : '') },
          ],
          ctx.width,
        ),
      );
    }),
  );
  common(
    team
      .command('remove-member')
      .argument('<id>', "the member's id (team members)")
      .description('remove a member'),
    'openrig team remove-member 42',
  ).action(
    act(async (ctx, [id]) => {
      const r = await ctx.client.request<{ msg?: string }>(
        'DELETE',
        `${V0}/team/members/${idArg(id, 'ID')}/`,
        {
          body: {},
        },
      );
      say(ctx, r.msg, 'Member removed');
    }),
  );
  common(
    team
      .command('set-role')
      .argument('<id>', "the member's id")
      .argument('<role>', 'the role to give them')
      .description("change a member's role"),
    'openrig team set-role 42 manager',
  ).action(
    act(async (ctx, [id, role]) => {
      const r = await ctx.client.request<{ msg?: string }>('PUT', `${V0}/team/members/${idArg(id, 'ID')}/`, {
        body: { role },
      });
      say(ctx, r.msg, 'Role changed');
    }),
  );
  common(
    team.command('roles').description("list the team's roles and their permissions"),
    'openrig team roles',
  ).action(
    act(async (ctx) => {
      const rows = await ctx.client.request<Role[]>('GET', `${V0}/team/roles-full/`);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        table(
          rows,
          [
            { header: 'ID', get: (r) => String(r.id) },
            { header: 'Name', get: (r) => r.name },
            { header: 'Members', get: (r) => String(r.members ?? 0) },
            { header: 'Permissions', get: (r) => JSON.stringify(r.permissions), shrink: true },
          ],
          ctx.width,
        ),
      );
    }),
  );
  common(
    team.command('role').argument('<name>', "the role's name").description('show one role'),
    'openrig team role member',
  ).action(
    act(async (ctx, [name]) => {
      const r = await ctx.client.request('GET', `${V0}/team/roles/${encodeURIComponent(String(name))}/`);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${JSON.stringify(r, null, 1)}\n`);
    }),
  );
  common(
    team
      .command('role-create')
      .argument('<name>', "the new role's name")
      .requiredOption(
        '--permissions <file>',
        'a permission file (as for API keys: {"api": {"instance_read": {}, …}})',
      )
      .description('add a role to the team'),
    'openrig team role-create viewer --permissions viewer.json',
  ).action(
    act(async (ctx, [name], o) => {
      const r = await ctx.client.request<{ msg?: string }>('POST', `${V0}/team/roles/`, {
        body: { name, permissions: permissionsArg(o.permissions) },
      });
      say(ctx, r.msg, 'Role created');
    }),
  );
  common(
    team
      .command('role-update')
      .argument('<id>', "the role's numeric id (team roles)")
      .option('--name <name>', 'a new name')
      .option('--permissions <file>', 'new permissions (a permission file)')
      .description("rename a role or change its permissions (its members' keys follow at once)"),
    'openrig team role-update 7 --permissions viewer.json',
  ).action(
    act(async (ctx, [id], o) => {
      const body: Record<string, unknown> = { name: o.name ?? null };
      if (o.permissions !== undefined) body.permissions = permissionsArg(o.permissions);
      const r = await ctx.client.request<{ msg?: string }>('PUT', `${V0}/team/roles/${idArg(id, 'ID')}/`, {
        body,
      });
      say(ctx, r.msg, 'Role updated');
    }),
  );
  common(
    team.command('role-remove').argument('<name>', "the role's name").description('remove a role no one has'),
    'openrig team role-remove viewer',
  ).action(
    act(async (ctx, [name]) => {
      const r = await ctx.client.request<{ msg?: string }>(
        'DELETE',
        `${V0}/team/roles/${encodeURIComponent(String(name))}/`,
        { body: {} },
      );
      say(ctx, r.msg, 'Role removed');
    }),
  );
  common(team.command('list').description('the teams you are a member of'), 'openrig team list').action(
    act(async (ctx) => {
      const r = await ctx.client.request<{
        teams: { id: number; name: string; role: string; is_owner: boolean }[];
      }>('GET', `${V0}/team/mine/`);
      if (ctx.raw) return ctx.printRaw();
      if (r.teams.length === 0) return ctx.out('You are in no team\n');
      ctx.out(
        table(
          r.teams,
          [
            { header: 'ID', get: (t) => String(t.id) },
            { header: 'Team', get: (t) => t.name },
            { header: 'Role', get: (t) => t.role },
          ],
          ctx.width,
        ),
      );
    }),
  );
}
