// Sign in: e-mail and password (POST /api/v0/users/login/). With 2FA on, the reply carries a
// tfa_secret and the user's methods; the second step picks a method (TOTP, SMS, e-mail or a backup
// code), sends a code where one is sent, and completes with POST /api/v0/tfa/, which sets the cookie.
// A text message without a method id goes to the number on file (legacy accounts).
import { useState, type FormEvent } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { client } from '../api';
import type { CurrentUser as User, LoginMethod } from '../../../src/client/client';
import type { TfaVerification } from '../../../src/contract/api-types';
import { Button, ErrorNote, Field, navigate } from '../ui';
import { useAction } from '../components/actions';
import { FactorForm, type Choice } from '../components/FactorForm';

interface Challenge {
  secret: string;
  methods: LoginMethod[];
}

/**
 * The second step's choices: the account's methods, primary first, then an e-mailed code and a
 * backup code. An account that needs 2FA but has no methods is a legacy one, verified by a text
 * message to the number on file; it has no backup codes, so none are offered.
 */
function choicesOf(methods: LoginMethod[]): Choice[] {
  if (methods.length === 0)
    return [
      { kind: 'sms', label: 'Text message (number on file)' },
      { kind: 'email', label: 'E-mail code' },
    ];
  const sorted = [...methods].sort((a, b) => Number(b.is_primary) - Number(a.is_primary));
  const out: Choice[] = sorted.map((m) =>
    m.method === 'totp'
      ? { kind: 'totp', id: m.id, label: `Authenticator app${m.label ? ` (${m.label})` : ''}` }
      : { kind: 'sms', id: m.id, label: `Text message${m.label ? ` (${m.label})` : ''}` },
  );
  out.push({ kind: 'email', label: 'E-mail code' }, { kind: 'backup', label: 'Backup code' });
  return out;
}

export function SignIn() {
  const qc = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useAction();
  const [challenge, setChallenge] = useState<Challenge | null>(null);

  const done = (user: User) => {
    qc.setQueryData(['me'], user);
    void qc.invalidateQueries({ queryKey: ['me'] });
    navigate(
      location.pathname === '/' || location.pathname === '/signin' ? '/search' : location.pathname,
      true,
    );
  };

  async function submit(e: FormEvent) {
    e.preventDefault();
    await run(async () => {
      const r = await client.passwordLogin(email, password);
      // Without a 2FA challenge the reply is the signed-in user.
      if (r.tfa_required && r.tfa_secret) setChallenge({ secret: r.tfa_secret, methods: r.methods ?? [] });
      else done(r as User);
    });
  }

  return (
    <main className="signin-wrap" id="main">
      <div className="signin-card">
        <div className="signin-brand">
          <img src="/favicon.svg" alt="" width="36" height="36" />
          <div>
            <h1>openrig</h1>
            <p className="muted">GPU cloud console</p>
          </div>
        </div>
        {!challenge ? (
          <form onSubmit={submit} aria-label="Sign in">
            <h2>Sign in</h2>
            <Field
              label="E-mail"
              type="email"
              autoComplete="username"
              required
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
            <Field
              label="Password"
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
            <ErrorNote error={error} />
            <Button type="submit" variant="primary" busy={busy} className="wide">
              Sign in
            </Button>
          </form>
        ) : (
          <SecondStep challenge={challenge} onDone={done} onBack={() => setChallenge(null)} />
        )}
      </div>
    </main>
  );
}

function SecondStep({
  challenge,
  onDone,
  onBack,
}: {
  challenge: Challenge;
  onDone: (u: User) => void;
  onBack: () => void;
}) {
  const send = async (c: Choice, again: boolean) => {
    const r =
      c.kind === 'sms'
        ? again
          ? await client.tfaResendSms({ secret: challenge.secret, tfa_method_id: c.id })
          : await client.tfaSendSms({ secret: challenge.secret, tfa_method_id: c.id })
        : await client.tfaSendEmail({ secret: challenge.secret });
    return { secret: r.secret ?? challenge.secret, note: r.msg || 'Code sent' };
  };

  const verify = async (c: Choice, code: string, codeSecret: string | null) => {
    let body: TfaVerification;
    if (c.kind === 'backup') body = { backup_code: code, secret: challenge.secret };
    else if (c.kind === 'totp')
      body = { tfa_method: 'totp', code, tfa_method_id: c.id, secret: challenge.secret };
    else if (c.kind === 'sms')
      body = { tfa_method: 'sms', code, tfa_method_id: c.id, secret: codeSecret ?? challenge.secret };
    else body = { tfa_method: 'email', code, secret: codeSecret ?? challenge.secret };
    onDone(await client.tfaLogin(body));
  };

  return (
    <FactorForm
      title="Two-factor verification"
      choices={choicesOf(challenge.methods)}
      name="tfa-choice"
      send={send}
      submit={verify}
      action="Verify and sign in"
      onBack={onBack}
    />
  );
}
