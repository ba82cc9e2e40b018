// Teams (docs/teams.md). The switcher in the top bar moves the signed-in session to one of your
// teams and back (POST /api/v0/team/switch/): in a team every page shows the team's account. The
// Team page, in a team: its members (role, remove), invitations (an e-mailed link), its roles
// (create with a permission file's JSON, remove); in your own account: your teams and a new team.
import { useState, type FormEvent } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { client } from '../api';
import { Button, ErrorNote, Field, Note, PageHead, SelectField, TextArea } from '../ui';
import { useAction, useActions } from '../components/actions';
import { FormFooter } from '../components/forms';
import { Table, TableCard } from '../components/Table';

const V0 = '/api/v0';

export interface MyTeams {
  current: number | null;
  teams: { id: number; name: string; role: string; is_owner: boolean }[];
}
interface Member {
  id: number;
  email: string;
  fullname: string;
  roles: string[];
  is_owner: boolean;
}
interface Role {
  id: number;
  name: string;
  permissions: unknown;
  members: number;
}

export const myTeamsQuery = () => client.request<MyTeams>('GET', `${V0}/team/mine/`);

/** Moves the session to the team (or home, null) and reads everything again as it. */
export function useSwitchTeam() {
  const qc = useQueryClient();
  return async (teamId: number | null) => {
    await client.request('POST', `${V0}/team/switch/`, { body: { team_id: teamId } });
    await qc.invalidateQueries();
  };
}

/** The top bar's switcher: your own account or one of your teams. */
export function TeamSwitcher() {
  const mine = useQuery({ queryKey: ['myteams'], queryFn: myTeamsQuery, staleTime: 30_000 });
  const switchTo = useSwitchTeam();
  const { busy, error, run } = useAction();
  if (!mine.data || mine.data.teams.length === 0) return null;
  return (
    <span className="team-switch">
      <label className="sr-only" htmlFor="team-switch">
        Acting for
      </label>
      <select
        id="team-switch"
        data-testid="team-switch"
        disabled={busy}
        value={mine.data.current ?? ''}
        onChange={(e) => void run(() => switchTo(e.target.value === '' ? null : Number(e.target.value)))}
      >
        <option value="">My account</option>
        {mine.data.teams.map((t) => (
          <option key={t.id} value={t.id}>
            Team {t.name} ({t.role})
          </option>
        ))}
      </select>
      {error ? <ErrorNote error={error} /> : null}
    </span>
  );
}

export function Team() {
  const mine = useQuery({ queryKey: ['myteams'], queryFn: myTeamsQuery });
  if (mine.error) return <ErrorNote error={mine.error} />;
  if (!mine.data) return <p aria-busy="true">Loading…</p>;
  const current = mine.data.teams.find((t) => t.id === mine.data.current);
  return current ? <TeamPage name={current.name} /> : <MyTeamsPage mine={mine.data} />;
}

function MyTeamsPage({ mine }: { mine: MyTeams }) {
  const qc = useQueryClient();
  const switchTo = useSwitchTeam();
  const [name, setName] = useState('');
  const [credit, setCredit] = useState('');
  const [made, setMade] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const acts = useActions<number>();
  const create = async (e: FormEvent) => {
    e.preventDefault();
    await run(async () => {
      const r = await client.request<{ msg: string }>('POST', `${V0}/team/`, {
        body: { team_name: name.trim(), transfer_credit: credit === '' ? null : Number(credit) },
      });
      setMade(r.msg);
      setName('');
      setCredit('');
      await qc.invalidateQueries();
    });
  };
  return (
    <>
      <PageHead title="Teams" />
      <TableCard title="Your teams" id="myteams-h">
        <ErrorNote error={acts.error} />
        <Table
          label="Your teams"
          columns={['Team', 'Role']}
          actions="Actions"
          rows={mine.teams}
          empty="You are in no team. Create one below, or accept an invitation from its e-mailed link."
          row={(t) => (
            <tr key={t.id}>
              <td data-label="Team">{t.name}</td>
              <td data-label="Role">{t.role}</td>
              <td className="act">
                <Button busy={acts.busy === t.id} onClick={() => void acts.run(t.id, () => switchTo(t.id))}>
                  Switch to {t.name}
                </Button>
              </td>
            </tr>
          )}
        />
      </TableCard>
      <section className="card" aria-labelledby="newteam-h">
        <h2 id="newteam-h">Create a team</h2>
        <p className="muted small">
          A team has its own balance, instances and SSH keys. You are its owner; invite people with a role.
        </p>
        <form onSubmit={create} className="stack">
          <Field
            label="Team name"
            required
            maxLength={64}
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <Field
            label="Move credit to it ($)"
            type="number"
            min={0}
            step="0.01"
            value={credit}
            onChange={(e) => setCredit(e.target.value)}
          />
          {made && <Note kind="ok">{made}</Note>}
          <FormFooter error={error} busy={busy} place="start">
            Create team
          </FormFooter>
        </form>
      </section>
    </>
  );
}

function TeamPage({ name }: { name: string }) {
  const qc = useQueryClient();
  const members = useQuery({
    queryKey: ['team-members'],
    queryFn: () => client.request<Member[]>('GET', `${V0}/team/members/`),
  });
  const roles = useQuery({
    queryKey: ['team-roles'],
    queryFn: () => client.request<Role[]>('GET', `${V0}/team/roles-full/`),
  });
  const acts = useActions<string>();
  const refresh = () =>
    qc
      .invalidateQueries({ queryKey: ['team-members'] })
      .then(() => qc.invalidateQueries({ queryKey: ['team-roles'] }));
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('member');
  const [sent, setSent] = useState<string | null>(null);
  const invite = useAction();
  const [roleName, setRoleName] = useState('');
  const [perms, setPerms] = useState('{"api": {"instance_read": {}, "team_read": {}}}');
  const newRole = useAction();

  const sendInvite = async (e: FormEvent) => {
    e.preventDefault();
    setSent(null);
    await invite.run(async () => {
      const r = await client.request<{ msg: string }>('POST', `${V0}/team/invite/`, {
        body: { email: email.trim(), role },
      });
      setSent(r.msg);
      setEmail('');
    });
  };
  const addRole = async (e: FormEvent) => {
    e.preventDefault();
    await newRole.run(async () => {
      let permissions: unknown;
      try {
        permissions = JSON.parse(perms);
      } catch {
        throw new Error('Permissions must be JSON, e.g. {"api": {"instance_read": {}}}');
      }
      await client.request('POST', `${V0}/team/roles/`, { body: { name: roleName.trim(), permissions } });
      setRoleName('');
      await refresh();
    });
  };
  const roleNames = (roles.data ?? []).map((r) => r.name).filter((n) => n !== 'owner');

  return (
    <>
      <PageHead title={`Team ${name}`} />
      <TableCard title="Members" id="members-h">
        <ErrorNote error={members.error ?? acts.error} />
        <Table
          label="Members"
          columns={['E-mail', 'Name', 'Role']}
          actions="Actions"
          rows={members.data}
          row={(m) => (
            <tr key={m.id} data-member={m.email}>
              <td data-label="E-mail">{m.email}</td>
              <td data-label="Name">{m.fullname}</td>
              <td data-label="Role">
                {m.is_owner ? (
                  'owner'
                ) : (
                  <select
                    aria-label={`Role of ${m.email}`}
                    value={m.roles[0] ?? ''}
                    onChange={(e) =>
                      void acts.run(`role-${m.id}`, async () => {
                        await client.request('PUT', `${V0}/team/members/${m.id}/`, {
                          body: { role: e.target.value },
                        });
                        await refresh();
                      })
                    }
                  >
                    {roleNames.map((n) => (
                      <option key={n}>{n}</option>
                    ))}
                  </select>
                )}
              </td>
              <td className="act">
                {!m.is_owner && (
                  <Button
                    variant="ghost"
                    aria-label={`Remove ${m.email}`}
                    busy={acts.busy === `rm-${m.id}`}
                    onClick={() =>
                      void acts.run(`rm-${m.id}`, async () => {
                        await client.request('DELETE', `${V0}/team/members/${m.id}/`, { body: {} });
                        await refresh();
                      })
                    }
                  >
                    Remove
                  </Button>
                )}
              </td>
            </tr>
          )}
        />
      </TableCard>
      <section className="card" aria-labelledby="invite-h">
        <h2 id="invite-h">Invite someone</h2>
        <form onSubmit={sendInvite} className="stack">
          <Field
            label="E-mail"
            type="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <SelectField label="Role" value={role} onChange={(e) => setRole(e.target.value)}>
            {roleNames.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </SelectField>
          {sent && <Note kind="ok">{sent}</Note>}
          <FormFooter error={invite.error} busy={invite.busy} place="start">
            Send invitation
          </FormFooter>
        </form>
      </section>
      <TableCard title="Roles" id="roles-h">
        <ErrorNote error={roles.error} />
        <Table
          label="Roles"
          columns={['Name', 'Members', 'Permissions']}
          actions="Actions"
          rows={roles.data}
          row={(r) => (
            <tr key={r.id} data-role={r.name}>
              <td data-label="Name">{r.name}</td>
              <td data-label="Members">{r.members}</td>
              <td data-label="Permissions" className="mono break-anywhere small">
                {JSON.stringify(r.permissions)}
              </td>
              <td className="act">
                {r.name !== 'owner' && (
                  <Button
                    variant="ghost"
                    aria-label={`Remove role ${r.name}`}
                    busy={acts.busy === `role-rm-${r.id}`}
                    onClick={() =>
                      void acts.run(`role-rm-${r.id}`, async () => {
                        await client.request('DELETE', `${V0}/team/roles/${encodeURIComponent(r.name)}/`, {
                          body: {},
                        });
                        await refresh();
                      })
                    }
                  >
                    Remove
                  </Button>
                )}
              </td>
            </tr>
          )}
        />
      </TableCard>
      <section className="card" aria-labelledby="newrole-h">
        <h2 id="newrole-h">Add a role</h2>
        <form onSubmit={addRole} className="stack">
          <Field
            label="Role name"
            required
            maxLength={64}
            value={roleName}
            onChange={(e) => setRoleName(e.target.value)}
          />
          <TextArea
            label="Permissions"
            className="mono"
            rows={3}
            value={perms}
            onChange={(e) => setPerms(e.target.value)}
            hint="As an API key's permission file: instance_, user_, billing_, machine_, team_ read/write, misc."
          />
          <FormFooter error={newRole.error} busy={newRole.busy} place="start">
            Add role
          </FormFooter>
        </form>
      </section>
    </>
  );
}
