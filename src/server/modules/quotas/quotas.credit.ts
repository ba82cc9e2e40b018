// Subaccounts (`show subaccounts`) and credit transfers between accounts (`transfer credit`).
// A transfer is one transaction: the sender's balance falls by a conditional UPDATE that only
// passes while the balance covers the amount (so concurrent transfers from one balance never
// take more than it holds), the recipient's rises by the same micro-dollars, and the ledger gets
// one row on each side (transfer_out, a charge to the sender; transfer_in, a credit to the
// recipient): each account's ledger still adds up to what its balance gained and lost.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { txRetry } from '../../db/tx.js';
import { insertLedger } from '../billing/billing.service.js';
import { recordBalanceLow } from '../webhooks/webhooks.events.js';
import { QuotaErrors } from './quotas.errors.js';
import * as repo from './quotas.repo.js';

const MICROS = 1_000_000;
/** The most one transfer may move: far above any real balance, far inside a bigint of micro-dollars. */
export const MAX_TRANSFER_USD = 1_000_000_000;

/** GET /subaccounts?owner=me: the accounts the caller made, in the user-table shape the CLI shows. */
export async function listSubaccounts(deps: Pick<Deps, 'db'>, auth: AuthContext) {
  const rows = await repo.subaccountsOf(deps.db, auth.user.id);
  return {
    success: true,
    users: rows.map((r) => ({
      id: Number(r.id),
      email: r.email,
      username: r.username,
      fullname: r.full_name,
      host_only: r.host_only === 1,
      balance: Number(r.balance_micros) / MICROS,
      credit: Number(r.balance_micros) / MICROS,
      email_verified: r.email_verified_at !== null,
      parent_id: Number(r.parent_id),
      created_at: Number(r.created_at) / 1000,
    })),
  };
}

async function recipientId(deps: Pick<Deps, 'db'>, raw: string | number): Promise<number> {
  const text = String(raw).trim();
  let id: number | null = null;
  if (/^[1-9][0-9]{0,15}$/.test(text))
    id = (await repo.userById(deps.db, Number(text))) ? Number(text) : null;
  else if (text.includes('@')) id = await repo.userIdByEmail(deps.db, text.toLowerCase());
  if (id === null)
    throw QuotaErrors.invalidRecipient(
      `No account is ${JSON.stringify(text.slice(0, 320))}: give its e-mail or id`,
    );
  return id;
}

/** PUT /commands/transfer_credit/: moves `amount` USD from the caller's balance to the recipient's. */
export async function transferCredit(
  deps: Pick<Deps, 'db' | 'store' | 'clock'>,
  auth: AuthContext,
  body: { sender?: string; recipient: string | number; amount: number },
) {
  const amount = body.amount;
  if (!Number.isFinite(amount) || amount <= 0 || amount > MAX_TRANSFER_USD)
    throw QuotaErrors.badRequest(`amount must be more than $0 and at most $${MAX_TRANSFER_USD}`);
  const micros = Math.round(amount * MICROS);
  if (micros < 1) throw QuotaErrors.badRequest('amount must be at least $0.000001');
  const to = await recipientId(deps, body.recipient);
  const from = auth.user.id;
  if (to === from) throw QuotaErrors.invalidRecipient('You cannot transfer credit to your own account');
  const now = deps.clock.now();
  const balance = await txRetry(deps.store, async (db) => {
    await repo.lockTransferAccounts(db, deps.store.dialect, [from, to]);
    // The sender's debit decides: it passes only while the balance (as committed) covers it.
    const left = await repo.debitIfCovered(db, from, micros);
    if (left === null)
      throw QuotaErrors.insufficientBalance(`Your balance does not cover a transfer of $${micros / MICROS}`);
    if ((await repo.credit(db, to, micros)) === null)
      throw QuotaErrors.invalidRecipient('The recipient account no longer exists');
    const at = { instance_id: null, period_start: now, period_end: now, created_at: now };
    await insertLedger(db, [
      { ...at, user_id: from, kind: 'transfer_out', amount_micros: micros },
      { ...at, user_id: to, kind: 'transfer_in', amount_micros: -micros },
    ]);
    await recordBalanceLow(db, now, [from, to]);
    return left;
  });
  return {
    success: true,
    msg: `Sent $${micros / MICROS} to account ${to}`,
    amount: micros / MICROS,
    recipient_id: to,
    balance: balance / MICROS,
  };
}
