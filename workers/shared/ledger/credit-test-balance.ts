/** Credit test money to a wallet (development and test configurations only; the route enforces that). */
import { sql } from 'drizzle-orm';
import { formatUsd, negateUsd, type Usd } from '../money/index.ts';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';
import { postTransaction } from './post-transaction.ts';

export interface CreditTestBalanceInput {
  walletId: string;
  amount: Usd;
  requestId: string;
  reason?: string | null;
}

export interface TestCredit {
  transaction_id: string;
  wallet_id: string;
  amount_usd: string;
  created_at: string;
}

/** A `top_up` from payment clearing marked `test: true`, like a test-mode payment would book. */
export async function creditTestBalance(db: SqlDatabase, input: CreditTestBalanceInput): Promise<TestCredit> {
  requireUuid(input.walletId, 'wallet');
  const clearing = await queryOne<{ id: string }>(db, sql`select faucet_system_wallet('payment_clearing') as id`);
  const result = await postTransaction(db, {
    kind: 'top_up',
    entries: [
      { walletId: input.walletId, amount: input.amount },
      { walletId: clearing.id, amount: negateUsd(input.amount) },
    ],
    requestId: input.requestId,
    reason: input.reason ?? 'test balance',
    metadata: { test: true },
    audit: { actorType: 'admin', action: 'wallet.credit_test_balance', targetType: 'wallet', targetId: input.walletId },
  });
  if (result.outcome !== 'posted') throw new Error(`test credit was not posted: ${result.outcome}`);
  return {
    transaction_id: result.transactionId,
    wallet_id: input.walletId,
    amount_usd: formatUsd(input.amount),
    created_at: result.createdAt.toISOString(),
  };
}
