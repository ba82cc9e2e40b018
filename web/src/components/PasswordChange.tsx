// Change the account's password (PUT /api/v0/users/password/): the current password and a new one
// of at least 8 characters. The other sessions end; this one stays signed in.
import { useState, type FormEvent } from 'react';
import { client } from '../api';
import { Button, ErrorNote, Field, Note } from '../ui';
import { useAction } from './actions';

export function PasswordChange() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [done, setDone] = useState('');
  const { busy, error, run } = useAction();
  async function submit(e: FormEvent) {
    e.preventDefault();
    setDone('');
    await run(async () => {
      setDone((await client.changePassword(current, next)).msg);
      setCurrent('');
      setNext('');
    });
  }
  return (
    <section className="card" aria-labelledby="password-h">
      <h2 id="password-h">Password</h2>
      <form onSubmit={submit} aria-label="Change password" className="stack">
        <Field
          label="Current password"
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={(e) => setCurrent(e.target.value)}
        />
        <Field
          label="New password (at least 8 characters)"
          type="password"
          autoComplete="new-password"
          minLength={8}
          required
          value={next}
          onChange={(e) => setNext(e.target.value)}
        />
        <ErrorNote error={error} />
        {done && <Note kind="ok">{done}</Note>}
        <Button type="submit" variant="primary" busy={busy}>
          Change password
        </Button>
      </form>
    </section>
  );
}
