// Every SQL statement of the sms module: the record of SMS sends the abuse limits count.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';

/** How many sends one account made since `since`, and when the first of them was. */
export function sendsByUser(db: Kysely<DB>, userId: number, since: number) {
  return db
    .selectFrom('sms_sends')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('created_at').as('first')])
    .where('user_id', '=', userId)
    .where('created_at', '>', since)
    .executeTakeFirstOrThrow();
}

/** How many sends went to one number since `since`, and when the first of them was. */
export function sendsToNumber(db: Kysely<DB>, phone: string, since: number) {
  return db
    .selectFrom('sms_sends')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('created_at').as('first')])
    .where('phone_number', '=', phone)
    .where('created_at', '>', since)
    .executeTakeFirstOrThrow();
}

/** The other accounts that sent codes of `purposes` to this number since `since`. */
export function otherPreauthUsers(
  db: Kysely<DB>,
  phone: string,
  purposes: string[],
  since: number,
  userId: number,
) {
  return db
    .selectFrom('sms_sends')
    .select('user_id')
    .distinct()
    .where('phone_number', '=', phone)
    .where('purpose', 'in', purposes)
    .where('created_at', '>', since)
    .where('user_id', '!=', userId)
    .execute();
}

export async function recordSmsSend(
  db: Kysely<DB>,
  p: { userId: number; phone: string; purpose: string; now: number },
): Promise<void> {
  await db
    .insertInto('sms_sends')
    .values({ user_id: p.userId, phone_number: p.phone, purpose: p.purpose, created_at: p.now })
    .execute();
}
