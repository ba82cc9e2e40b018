// Sign in: e-mail and password (POST /api/v0/users/login/). With 2FA on, the reply carries a
// tfa_secret and the user's methods; the second step picks a method (TOTP, SMS, e-mail or a backup
// code), sends a code where one is sent, and completes with POST /api/v0/tfa/, which sets the cookie.
// A text message without a method id goes to the number on file (legacy accounts).
// Beside it: creating an account (where the operator switched sign-up on; the server says so
// otherwise), asking for a password reset link, and the two pages those e-mails link to
// (/verify-email?token=… and /reset-password?token=…).
// Single sign-on: a "Sign in with …" link per configured OpenID Connect provider (listed by
// GET /api/v0/auth/oidc/providers). The provider's redirect back lands signed in, or here with the
// 2FA step's secret and methods (#sso_tfa=…&methods=…) or a refusal's code (#sso_error=CODE) in the
// address's fragment, which this page reads once and removes.
import { useState, type FormEvent } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
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

/** What each refusal code of a single sign-on means, in this page's own words. */
const SSO_ERRORS: Record<string, string> = {
  provider_error: 'The sign-in provider did not sign you in.',
  provider_unreachable: 'The sign-in provider cannot be reached right now: try again later.',
  state_mismatch: 'This sign-in was not started in this browser: start it again.',
  state_invalid: 'This sign-in expired or was already used: start it again.',
  token_invalid: "The sign-in provider's answer could not be verified.",
  email_missing: 'The sign-in provider gave no e-mail address.',
  email_unverified: 'The sign-in provider has not verified your e-mail address.',
  domain_not_allowed: "Your e-mail's domain may not sign in here.",
};

/** The single sign-on's answer in the fragment, read once (and removed from the address). */
function ssoReturn(): { challenge: Challenge | null; error: string | null } {
  const f = new URLSearchParams(location.hash.slice(1));
  const secret = f.get('sso_tfa');
  const code = f.get('sso_error');
  if (!secret && !code) return { challenge: null, error: null };
  history.replaceState(null, '', location.pathname + location.search);
  if (code) return { challenge: null, error: SSO_ERRORS[code] ?? 'Single sign-on failed.' };
  let methods: LoginMethod[] = [];
  try {
    methods = JSON.parse(f.get('methods') ?? '[]') as LoginMethod[];
  } catch {
    methods = [];
  }
  return { challenge: { secret: secret!, methods }, error: null };
}

interface SsoProvider {
  id: string;
  name: string;
  start_url: string;
}

/** "Sign in with …" for each provider the operator configured; nothing when there is none. */
function SsoLinks() {
  const q = useQuery({
    queryKey: ['sso-providers'],
    queryFn: async (): Promise<SsoProvider[]> => {
      const r = await fetch('/api/v0/auth/oidc/providers');
      return r.ok ? ((await r.json()) as { providers: SsoProvider[] }).providers : [];
    },
    staleTime: Infinity,
  });
  const providers = q.data ?? [];
  if (providers.length === 0) return null;
  return (
    <div className="stack" aria-label="Single sign-on">
      {providers.map((p) => (
        <a key={p.id} className="btn btn-default wide" href={p.start_url}>
          <span>Sign in with {p.name}</span>
        </a>
      ))}
    </div>
  );
}

type Mode = 'signin' | 'signup' | 'forgot' | 'reset' | 'verify';

/** The page an e-mailed link opens, with its token; else the sign-in form. */
function initialMode(): { mode: Mode; token: string } {
  const token = new URLSearchParams(location.search).get('token') ?? '';
  if (location.pathname === '/reset-password' && token) return { mode: 'reset', token };
  if (location.pathname === '/verify-email' && token) return { mode: 'verify', token };
  return { mode: 'signin', token: '' };
}

export function SignIn() {
  const [{ mode, token }, setMode] = useState(initialMode);
  const go = (m: Mode) => {
    if (mode === 'reset' || mode === 'verify') navigate('/signin', true);
    setMode({ mode: m, token: '' });
  };
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
        {mode === 'signin' && <SignInForm onMode={go} />}
        {mode === 'signup' && <SignUpForm onMode={go} />}
        {mode === 'forgot' && <ForgotForm onMode={go} />}
        {mode === 'reset' && <ResetForm token={token} onMode={go} />}
        {mode === 'verify' && <VerifyEmail token={token} onMode={go} />}
      </div>
    </main>
  );
}

/** Links between the forms. */
function Switch({ onMode, to }: { onMode: (m: Mode) => void; to: [Mode, string][] }) {
  return (
    <p className="row gap">
      {to.map(([m, label]) => (
        <Button key={m} type="button" variant="ghost" onClick={() => onMode(m)}>
          {label}
        </Button>
      ))}
    </p>
  );
}

function SignUpForm({ onMode }: { onMode: (m: Mode) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [sent, setSent] = useState('');
  const { busy, error, run } = useAction();
  async function submit(e: FormEvent) {
    e.preventDefault();
    await run(async () => setSent((await client.signup({ email, password })).msg));
  }
  return (
    <form onSubmit={submit} aria-label="Create an account">
      <h2>Create an account</h2>
      {sent ? (
        <p role="status">{sent}</p>
      ) : (
        <>
          <Field
            label="E-mail"
            type="email"
            autoComplete="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <Field
            label="Password (at least 8 characters)"
            type="password"
            autoComplete="new-password"
            minLength={8}
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          <ErrorNote error={error} />
          <Button type="submit" variant="primary" busy={busy} className="wide">
            Create account
          </Button>
        </>
      )}
      <Switch onMode={onMode} to={[['signin', 'Back to sign in']]} />
    </form>
  );
}

function ForgotForm({ onMode }: { onMode: (m: Mode) => void }) {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState('');
  const { busy, error, run } = useAction();
  async function submit(e: FormEvent) {
    e.preventDefault();
    await run(async () => setSent((await client.requestPasswordReset(email)).msg));
  }
  return (
    <form onSubmit={submit} aria-label="Reset your password">
      <h2>Reset your password</h2>
      {sent ? (
        <p role="status">{sent}</p>
      ) : (
        <>
          <Field
            label="E-mail"
            type="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <ErrorNote error={error} />
          <Button type="submit" variant="primary" busy={busy} className="wide">
            E-mail me a reset link
          </Button>
        </>
      )}
      <Switch onMode={onMode} to={[['signin', 'Back to sign in']]} />
    </form>
  );
}

function ResetForm({ token, onMode }: { token: string; onMode: (m: Mode) => void }) {
  const [password, setPassword] = useState('');
  const [done, setDone] = useState('');
  const { busy, error, run } = useAction();
  async function submit(e: FormEvent) {
    e.preventDefault();
    await run(async () => setDone((await client.confirmPasswordReset(token, password)).msg));
  }
  return (
    <form onSubmit={submit} aria-label="Choose a new password">
      <h2>Choose a new password</h2>
      {done ? (
        <p role="status">{done}</p>
      ) : (
        <>
          <Field
            label="New password (at least 8 characters)"
            type="password"
            autoComplete="new-password"
            minLength={8}
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          <ErrorNote error={error} />
          <Button type="submit" variant="primary" busy={busy} className="wide">
            Set password
          </Button>
        </>
      )}
      <Switch onMode={onMode} to={[['signin', 'Sign in']]} />
    </form>
  );
}

function VerifyEmail({ token, onMode }: { token: string; onMode: (m: Mode) => void }) {
  const [done, setDone] = useState('');
  const { busy, error, run } = useAction();
  return (
    <section aria-label="Confirm your e-mail">
      <h2>Confirm your e-mail</h2>
      {done ? (
        <p role="status">{done}</p>
      ) : (
        <>
          <ErrorNote error={error} />
          <Button
            type="button"
            variant="primary"
            busy={busy}
            className="wide"
            onClick={() => void run(async () => setDone((await client.verifySignup(token)).msg))}
          >
            Confirm and create my account
          </Button>
        </>
      )}
      <Switch onMode={onMode} to={[['signin', 'Sign in']]} />
    </section>
  );
}

function SignInForm({ onMode }: { onMode: (m: Mode) => void }) {
  const qc = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useAction();
  const [sso] = useState(ssoReturn);
  const [challenge, setChallenge] = useState<Challenge | null>(sso.challenge);

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
    <>
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
          <ErrorNote error={error ?? sso.error} />
          <Button type="submit" variant="primary" busy={busy} className="wide">
            Sign in
          </Button>
          <SsoLinks />
          <Switch
            onMode={onMode}
            to={[
              ['forgot', 'Forgot your password?'],
              ['signup', 'Create an account'],
            ]}
          />
        </form>
      ) : (
        <SecondStep challenge={challenge} onDone={done} onBack={() => setChallenge(null)} />
      )}
    </>
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
