/**
 * A call that will not be billed (refused after its claim, or its upstream failed before accepting
 * it): release its hold and budget reservation and give its client request id back, so the SDK's
 * same-id retry is served. One statement; a no-op for a call already booked.
 */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';

export async function abandonCall(db: SqlDatabase, moneyKey: string): Promise<boolean> {
  const row = await queryOne<{ abandoned: boolean }>(db, sql`select faucet_abandon_call(${moneyKey}) as abandoned`);
  return row.abandoned;
}
