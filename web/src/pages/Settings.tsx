// Account settings (PUT /api/v0/users/): the name, the billing address and the balance threshold
// (the balance.low alert of the webhooks), prefilled from GET /api/v0/users/current. Every field is
// sent; an empty text field clears it. The server checks the whole form and answers a 400 naming
// the field, which is shown as it is.
import { useState, type FormEvent } from 'react';
import { client } from '../api';
import type { CurrentUser as User } from '../../../src/client/client';
import { ErrorNote, Field, Note } from '../ui';
import { useMe } from '../App';
import { useAction, useRefresh } from '../components/actions';
import { FormFooter } from '../components/forms';

const ADDRESS = [
  ['billaddress_line1', 'Address line 1', 200],
  ['billaddress_line2', 'Address line 2', 200],
  ['billaddress_city', 'City', 100],
  ['billaddress_zip', 'Postal code', 32],
  ['billaddress_country', 'Country', 100],
  ['billaddress_taxinfo', 'Tax ID', 100],
] as const;

type AddressKey = (typeof ADDRESS)[number][0];

export function Settings() {
  const me = useMe();
  if (!me.data) return <ErrorNote error={me.error} />;
  return <SettingsForm user={me.data} />;
}

function SettingsForm({ user }: { user: User }) {
  const refresh = useRefresh();
  const [fullname, setFullname] = useState(user.full_name ?? '');
  const [address, setAddress] = useState<Record<AddressKey, string>>(
    () => Object.fromEntries(ADDRESS.map(([k]) => [k, user[k] ?? ''])) as Record<AddressKey, string>,
  );
  const [alert, setAlert] = useState(!!user.balance_threshold_enabled);
  const [threshold, setThreshold] = useState(
    user.balance_threshold === null || user.balance_threshold === undefined
      ? ''
      : String(user.balance_threshold),
  );
  const [saved, setSaved] = useState<string | null>(null);
  const { busy, error, run } = useAction();

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(null);
    await run(async () => {
      const r = await client.updateAccount({
        fullname,
        ...address,
        balance_threshold_enabled: alert,
        balance_threshold: threshold.trim() === '' ? null : Number(threshold),
      });
      setSaved(r.msg);
      await refresh('me');
    });
  };

  return (
    <section className="card" aria-labelledby="settings-h">
      <h2 id="settings-h">Account settings</h2>
      <form onSubmit={save} className="stack" aria-label="Account settings">
        <Field label="E-mail" value={user.email} readOnly hint="The operator of this server changes it." />
        <Field
          label="Full name"
          maxLength={200}
          autoComplete="name"
          value={fullname}
          onChange={(e) => setFullname(e.target.value)}
        />
        <fieldset className="stack">
          <legend>Billing address</legend>
          {ADDRESS.map(([k, label, max]) => (
            <Field
              key={k}
              label={label}
              maxLength={max}
              value={address[k]}
              onChange={(e) => setAddress({ ...address, [k]: e.target.value })}
            />
          ))}
        </fieldset>
        <fieldset className="stack">
          <legend>Low balance alert</legend>
          <label className="check">
            <input type="checkbox" checked={alert} onChange={(e) => setAlert(e.target.checked)} />
            Alert me when my balance falls below the threshold
          </label>
          <Field
            label="Threshold ($)"
            type="number"
            min="0"
            step="0.01"
            value={threshold}
            onChange={(e) => setThreshold(e.target.value)}
            hint="The alert is the balance.low event of your webhooks; no e-mail is sent for it."
          />
        </fieldset>
        {saved && <Note kind="ok">{saved}</Note>}
        <FormFooter error={error} busy={busy} place="start">
          Save settings
        </FormFooter>
      </form>
    </section>
  );
}
