// Account environment variables (GET/POST/PUT/DELETE /api/v0/secrets/): every instance created
// afterwards gets them. The list shows names; a value is put in the page only while its owner
// reveals it. Values are typed in password fields, so they are not shown while typed.
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { client } from '../api';
import { Button, Dialog, ErrorNote, Field, Note } from '../ui';
import { useAction, useRefresh } from '../components/actions';
import { FormFooter } from '../components/forms';
import { Table, TableCard } from '../components/Table';

export function EnvVars() {
  const refresh = useRefresh();
  const vars = useQuery({
    queryKey: ['envvars'],
    queryFn: () => client.envVars(),
  });
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const [shown, setShown] = useState<Set<string>>(new Set());
  const [changing, setChanging] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);

  const add = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    await run(async () => {
      const r = await client.createEnvVar(name.trim(), value);
      setDone(r.msg ?? null);
      setName('');
      setValue('');
      await refresh('envvars');
    });
  };
  const toggle = (n: string) =>
    setShown((s) => {
      const next = new Set(s);
      if (next.has(n)) next.delete(n);
      else next.add(n);
      return next;
    });
  const rows = vars.data ? Object.keys(vars.data.secrets).sort() : undefined;

  return (
    <>
      <section className="card" aria-labelledby="newvar-h">
        <h2 id="newvar-h">Add an environment variable</h2>
        <p className="muted small">
          Every instance you create afterwards gets it in its environment; an instance&apos;s own env wins
          over a variable of the same name. Instances that exist keep the values they were created with.
        </p>
        <form onSubmit={add} className="stack">
          <Field
            label="Name"
            required
            maxLength={128}
            pattern="[A-Za-z_][A-Za-z0-9_]*"
            title="Letters, digits and underscores, not starting with a digit"
            className="mono"
            placeholder="HF_TOKEN"
            autoComplete="off"
            spellCheck={false}
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <Field
            label="Value"
            type="password"
            autoComplete="new-password"
            maxLength={16384}
            value={value}
            onChange={(e) => setValue(e.target.value)}
            hint="Stored encrypted; the host an instance runs on sees its environment."
          />
          {done && <Note kind="ok">{done}</Note>}
          <FormFooter error={error} busy={busy} place="start">
            Add variable
          </FormFooter>
        </form>
      </section>
      <TableCard title="Environment variables" id="vars-h">
        <ErrorNote error={vars.error} />
        <Table
          label="Environment variables"
          columns={['Name', 'Value']}
          actions="Actions"
          rows={rows}
          empty="No environment variables."
          row={(n) => (
            <tr key={n} data-var={n}>
              <td data-label="Name" className="mono break-anywhere">
                {n}
              </td>
              <td data-label="Value" className="mono break-anywhere">
                {shown.has(n) ? (
                  <span data-testid="var-value">
                    {vars.data!.secrets[n] || <em className="muted">(empty)</em>}
                  </span>
                ) : (
                  <span className="muted" aria-label="hidden">
                    ••••••••
                  </span>
                )}
              </td>
              <td className="act">
                <Button
                  variant="ghost"
                  aria-pressed={shown.has(n)}
                  aria-label={`${shown.has(n) ? 'Hide' : 'Show'} value of ${n}`}
                  onClick={() => toggle(n)}
                >
                  {shown.has(n) ? 'Hide' : 'Show'}
                </Button>
                <Button variant="ghost" aria-label={`Change ${n}`} onClick={() => setChanging(n)}>
                  Change
                </Button>
                <Button variant="ghost" aria-label={`Delete ${n}`} onClick={() => setDeleting(n)}>
                  Delete
                </Button>
              </td>
            </tr>
          )}
        />
      </TableCard>
      {changing && <ChangeVar name={changing} onClose={() => setChanging(null)} />}
      {deleting && <DeleteVar name={deleting} onClose={() => setDeleting(null)} />}
    </>
  );
}

function ChangeVar({ name, onClose }: { name: string; onClose: () => void }) {
  const refresh = useRefresh();
  const [value, setValue] = useState('');
  const { busy, error, run } = useAction();
  const save = async (e: FormEvent) => {
    e.preventDefault();
    await run(async () => {
      await client.updateEnvVar(name, value);
      await refresh('envvars');
      onClose();
    });
  };
  return (
    <Dialog title={`Change ${name}`} open onClose={onClose}>
      <form onSubmit={save} className="stack">
        <Field
          label="New value"
          type="password"
          autoComplete="new-password"
          maxLength={16384}
          autoFocus
          value={value}
          onChange={(e) => setValue(e.target.value)}
          hint="Instances created from now on get it; existing ones keep the old value."
        />
        <FormFooter error={error} busy={busy} onCancel={onClose}>
          Save value
        </FormFooter>
      </form>
    </Dialog>
  );
}

function DeleteVar({ name, onClose }: { name: string; onClose: () => void }) {
  const refresh = useRefresh();
  const { busy, error, run } = useAction();
  return (
    <Dialog title={`Delete ${name}?`} open onClose={onClose}>
      <p>
        Instances created from now on no longer get <code>{name}</code>. Instances that exist keep the value
        they were created with.
      </p>
      <FormFooter
        error={error}
        busy={busy}
        variant="danger"
        onCancel={onClose}
        onConfirm={() =>
          run(async () => {
            await client.deleteEnvVar(name);
            await refresh('envvars');
            onClose();
          })
        }
      >
        Delete variable
      </FormFooter>
    </Dialog>
  );
}
