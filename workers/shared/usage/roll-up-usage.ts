/** Housekeeping of the usage rollup: fold the events not rolled up yet (migration 0012). */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';

const BATCH = 100_000;
const MAX_BATCHES = 20;

/**
 * Folds pending usage events into `usage_rollup_daily`, a batch per statement, until the list is
 * short or `MAX_BATCHES` ran (the next cron goes on). Reads are exact without it; it keeps the
 * pending list, which every usage read adds, short. Returns the events folded.
 */
export async function rollUpUsage(db: SqlDatabase, batch = BATCH): Promise<number> {
  let total = 0;
  for (let round = 0; round < MAX_BATCHES; round++) {
    const row = await queryOne<{ folded: number }>(db, sql`select faucet_roll_up_usage(${batch}::integer) as folded`);
    total += row.folded;
    if (row.folded < batch) break;
  }
  return total;
}
