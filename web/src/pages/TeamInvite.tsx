// The page an invitation e-mail links to: /team/invite/TOKEN. Signed out, the shell shows the
// sign-in first and comes back here. It shows what the invitation is for, and accepting it
// (POST /api/v0/team/invite/TOKEN/) makes the signed-in account a member; then the session can
// switch to the team.
import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { client } from '../api';
import { Button, ErrorNote, Note, PageHead, navigate } from '../ui';
import { useAction } from '../components/actions';
import { useSwitchTeam } from './Team';

interface Invite {
  team_name: string;
  role: string;
  email: string;
  expires_at: number;
  for_you: boolean;
}

export function TeamInvite({ token }: { token: string }) {
  const qc = useQueryClient();
  const switchTo = useSwitchTeam();
  const inv = useQuery({
    queryKey: ['invite', token],
    queryFn: () => client.request<Invite>('GET', `/api/v0/team/invite/${encodeURIComponent(token)}/`),
    retry: false,
  });
  const [joined, setJoined] = useState<{ team_id: number; msg: string } | null>(null);
  const { busy, error, run } = useAction();
  const accept = () =>
    run(async () => {
      const r = await client.request<{ team_id: number; msg: string }>(
        'POST',
        `/api/v0/team/invite/${encodeURIComponent(token)}/`,
        { body: {} },
      );
      setJoined(r);
      await qc.invalidateQueries({ queryKey: ['myteams'] });
    });

  return (
    <>
      <PageHead title="Team invitation" />
      <section className="card" aria-labelledby="inv-h">
        <h2 id="inv-h">Join a team</h2>
        {inv.error && !joined ? <ErrorNote error={inv.error} /> : null}
        {inv.data && !joined && (
          <>
            <p data-testid="invite-text">
              You are invited to join the team <strong>{inv.data.team_name}</strong> as{' '}
              <strong>{inv.data.role}</strong>.
            </p>
            {!inv.data.for_you && (
              <Note kind="warn">
                This invitation was sent to {inv.data.email}: sign in as that account to accept it.
              </Note>
            )}
            <ErrorNote error={error} />
            <Button busy={busy} disabled={!inv.data.for_you} onClick={() => void accept()}>
              Accept invitation
            </Button>
          </>
        )}
        {joined && (
          <>
            <Note kind="ok">{joined.msg.replace(/ Use this team API key.*$/, '')}</Note>
            <Button
              onClick={() =>
                void run(async () => {
                  await switchTo(joined.team_id);
                  navigate('/team');
                })
              }
            >
              Switch to the team
            </Button>
          </>
        )}
      </section>
    </>
  );
}
