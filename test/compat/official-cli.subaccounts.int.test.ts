// The official CLI's subaccount and credit commands: create subaccount (POST /users/ with
// parent_id "me"), show subaccounts (GET /subaccounts?owner=me) and transfer credit (PUT
// /commands/transfer_credit/), each request as that CLI sends it, each reply checked for what the
// CLI reads, and each followed by a read that shows its effect.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { cli, expectOk, f } from './official-cli.js';

describeEachDb('official CLI: subaccounts and credit transfers', (dialect) => {
  const t = useTestApp(dialect);

  it('create subaccount, then show subaccounts lists it; its key works', async () => {
    const parent = await t().user({ balanceUsd: 50 });
    const email = `child-${Date.now()}@example.com`;
    const made = await cli(t(), {
      method: 'POST',
      path: '/users/',
      key: parent.apiKey,
      json: { email, username: 'child', password: 'correct horse battery', host_only: true, parent_id: 'me' },
    });
    expectOk(made);
    expect(made.body).toMatchObject({
      success: true,
      email,
      username: 'child',
      host_only: true,
      parent_id: parent.id,
    });
    expect(made.body.api_key).toMatch(/^or_/);

    const shown = await cli(t(), {
      method: 'GET',
      path: '/subaccounts',
      query: { owner: 'me' },
      key: parent.apiKey,
    });
    expectOk(shown);
    expect(shown.body.users).toHaveLength(1);
    // The CLI prints the user table: these are the fields it shows that openrig has.
    expect(shown.body.users[0]).toMatchObject({
      id: made.body.id,
      email,
      username: 'child',
      host_only: true,
      balance: 0,
      credit: 0,
      email_verified: false,
      fullname: '',
    });
    const me = await cli(t(), { method: 'GET', path: '/users/current', key: made.body.api_key });
    expectOk(me);
    expect(me.body.email).toBe(email);

    // One level deep: a subaccount makes none; another account's subaccounts are its own.
    const grandchild = await cli(t(), {
      method: 'POST',
      path: '/users/',
      key: made.body.api_key,
      json: {
        email: `g-${email}`,
        username: 'g',
        password: 'correct horse battery',
        host_only: false,
        parent_id: 'me',
      },
    });
    expect(grandchild.status).toBe(403);
    const other = await t().user();
    const none = await cli(t(), {
      method: 'GET',
      path: '/subaccounts',
      query: { owner: 'me' },
      key: other.apiKey,
    });
    expect(none.body.users).toEqual([]);
    // The same e-mail twice: 409, and no second subaccount.
    const again = await cli(t(), {
      method: 'POST',
      path: '/users/',
      key: parent.apiKey,
      json: { email, username: 'x', password: 'correct horse battery', host_only: false, parent_id: 'me' },
    });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('email_taken');
  });

  it('POST /users/ without a parent is a sign-up: refused while OPENRIG_SIGNUP is off', async () => {
    const r = await cli(t(), {
      method: 'POST',
      path: '/users/',
      key: null,
      json: { email: 'new@example.com', password: 'correct horse battery' },
    });
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('signup_disabled');
    const anon = await cli(t(), {
      method: 'POST',
      path: '/users/',
      key: null,
      json: {
        email: 'n2@example.com',
        username: 'n',
        password: 'correct horse battery',
        host_only: false,
        parent_id: 'me',
      },
    });
    expect(anon.status).toBe(401);
  });

  it('transfer credit by e-mail and by id: both balances and both ledgers move; a read shows it', async () => {
    const sender = await t().user({ balanceUsd: 30 });
    const recipient = await t().user({ balanceUsd: 0 });
    const sent = await cli(t(), {
      method: 'PUT',
      path: '/commands/transfer_credit/',
      key: sender.apiKey,
      json: { sender: 'me', recipient: recipient.email, amount: f(12.5) },
    });
    expectOk(sent);
    expect(sent.body).toMatchObject({
      success: true,
      amount: 12.5,
      recipient_id: recipient.id,
      balance: 17.5,
    });
    const byId = await cli(t(), {
      method: 'PUT',
      path: '/commands/transfer_credit/',
      key: sender.apiKey,
      json: { sender: 'me', recipient: String(recipient.id), amount: f(2.5) },
    });
    expectOk(byId);

    const a = await cli(t(), { method: 'GET', path: '/users/current', key: sender.apiKey });
    const b = await cli(t(), { method: 'GET', path: '/users/current', key: recipient.apiKey });
    expect(a.body.balance).toBeCloseTo(15, 6);
    expect(b.body.balance).toBeCloseTo(15, 6);
    const ledger = await t()
      .deps.db.selectFrom('billing_ledger')
      .select(['user_id', 'kind', 'amount_micros'])
      .where('user_id', 'in', [sender.id, recipient.id])
      .where('kind', 'like', 'transfer%')
      .orderBy('id')
      .execute();
    expect(ledger.map((l) => [Number(l.user_id), l.kind, Number(l.amount_micros)])).toEqual([
      [sender.id, 'transfer_out', 12_500_000],
      [recipient.id, 'transfer_in', -12_500_000],
      [sender.id, 'transfer_out', 2_500_000],
      [recipient.id, 'transfer_in', -2_500_000],
    ]);
  });

  it('answers invalid_recipient and insufficient_balance with a msg, moving nothing', async () => {
    const sender = await t().user({ balanceUsd: 5 });
    const recipient = await t().user();
    const send = (recipientRef: string, amount: number) =>
      cli(t(), {
        method: 'PUT',
        path: '/commands/transfer_credit/',
        key: sender.apiKey,
        json: { sender: 'me', recipient: recipientRef, amount: f(amount) },
      });
    const nobody = await send('nobody@example.com', 1);
    expect(nobody.status).toBe(400);
    expect(nobody.body).toMatchObject({ error: 'invalid_recipient', success: false });
    expect(nobody.body.msg).toMatch(/nobody@example.com/);
    const self = await send(sender.email, 1);
    expect(self.body.error).toBe('invalid_recipient');
    const broke = await send(recipient.email, 5.01);
    expect(broke.status).toBe(402);
    expect(broke.body).toMatchObject({ error: 'insufficient_balance', success: false });
    const zero = await send(recipient.email, 0);
    expect(zero.status).toBe(400);
    const me = await cli(t(), { method: 'GET', path: '/users/current', key: sender.apiKey });
    expect(me.body.balance).toBe(5);
  });
});
