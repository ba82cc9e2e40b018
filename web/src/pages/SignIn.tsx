// Sign in: e-mail and password (POST /api/v0/users/login/). With 2FA on, the reply carries a
// tfa_secret and the user's methods; the second step picks a method (TOTP, SMS, e-mail or a backup
// code), sends a code where one is sent, and completes with POST /api/v0/tfa/, which sets the cookie.
import { useState, type FormEvent } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, type LoginMethod, type User } from '../api';
import { Button, ErrorNote, Field, Note, navigate } from '../ui';

interface Challenge {
  secret: string;
  methods: LoginMethod[];
}

type Choice =
  | { kind: 'totp'; id: number; label: string }
  | { kind: 'sms'; id: number; label: string }
  | { kind: 'email'; label: string }
  | { kind: 'backup'; label: string };

function choicesOf(methods: LoginMethod[]): Choice[] {
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
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
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
    setBusy(true);
    setError(null);
    try {
      const r = await api<User & { tfa_required?: boolean; tfa_secret?: string; methods?: LoginMethod[] }>(
        'POST',
        '/api/v0/users/login/',
        { email, password },
      );
      if (r.tfa_required && r.tfa_secret) setChallenge({ secret: r.tfa_secret, methods: r.methods ?? [] });
      else done(r);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
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
  const choices = choicesOf(challenge.methods);
  const [idx, setIdx] = useState(0);
  const choice = choices[idx]!;
  const [code, setCode] = useState('');
  const [codeSecret, setCodeSecret] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);
  const [busy, setBusy] = useState<'send' | 'verify' | null>(null);
  const [error, setError] = useState<unknown>(null);

  const pick = (i: number) => {
    setIdx(i);
    setCode('');
    setSent(null);
    setCodeSecret(null);
    setError(null);
  };

  async function send(resend: boolean) {
    setBusy('send');
    setError(null);
    try {
      const r =
        choice.kind === 'sms'
          ? await api<{ msg: string; secret: string }>(
              'POST',
              resend ? '/api/v0/tfa/sms/resend/' : '/api/v0/tfa/sms/',
              { secret: challenge.secret, tfa_method_id: choice.id },
            )
          : await api<{ msg: string; secret: string }>('POST', '/api/v0/tfa/email/', {
              secret: challenge.secret,
            });
      setCodeSecret(r.secret ?? challenge.secret);
      setSent(r.msg || 'Code sent');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  }

  async function verify(e: FormEvent) {
    e.preventDefault();
    setBusy('verify');
    setError(null);
    try {
      let body: Record<string, unknown>;
      if (choice.kind === 'backup') body = { backup_code: code.trim(), secret: challenge.secret };
      else if (choice.kind === 'totp')
        body = { tfa_method: 'totp', code: code.trim(), tfa_method_id: choice.id, secret: challenge.secret };
      else if (choice.kind === 'sms')
        body = {
          tfa_method: 'sms',
          code: code.trim(),
          tfa_method_id: choice.id,
          secret: codeSecret ?? challenge.secret,
        };
      else body = { tfa_method: 'email', code: code.trim(), secret: codeSecret ?? challenge.secret };
      const user = await api<User>('POST', '/api/v0/tfa/', body);
      onDone(user);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  }

  const needsSend = choice.kind === 'sms' || choice.kind === 'email';
  return (
    <form onSubmit={verify} aria-label="Two-factor verification">
      <h2>Two-factor verification</h2>
      <fieldset className="choices">
        <legend>Verify with</legend>
        {choices.map((c, i) => (
          <label key={`${c.kind}-${'id' in c ? c.id : ''}`} className="choice">
            <input type="radio" name="tfa-choice" checked={i === idx} onChange={() => pick(i)} />
            <span>{c.label}</span>
          </label>
        ))}
      </fieldset>
      {needsSend && (
        <div className="row">
          <Button busy={busy === 'send'} onClick={() => send(!!sent && choice.kind === 'sms')}>
            {sent ? 'Send again' : choice.kind === 'sms' ? 'Text me a code' : 'E-mail me a code'}
          </Button>
          {sent && <Note kind="ok">{sent}</Note>}
        </div>
      )}
      {choice.kind === 'backup' ? (
        <Field
          label="Backup code"
          placeholder="XXXX-XXXX-XXXX"
          autoComplete="off"
          required
          value={code}
          onChange={(e) => setCode(e.target.value)}
        />
      ) : (
        <Field
          label={choice.kind === 'totp' ? 'Code from your authenticator app' : 'Code'}
          inputMode="numeric"
          autoComplete="one-time-code"
          pattern="[0-9]{6}"
          maxLength={6}
          required
          value={code}
          onChange={(e) => setCode(e.target.value.replace(/\D/g, ''))}
        />
      )}
      <ErrorNote error={error} />
      <div className="row">
        <Button variant="ghost" onClick={onBack}>
          Back
        </Button>
        <Button type="submit" variant="primary" busy={busy === 'verify'} disabled={needsSend && !codeSecret}>
          Verify and sign in
        </Button>
      </div>
    </form>
  );
}
