/**
 * Operator adjustments: a correction is a new balanced transaction against the wallet, never an edit.
 * Counter-accounts: `adjustment` moves money from/to the platform's adjustments account; `refund` and
 * `chargeback` move it through payment clearing, like the payments they correct.
 *
 * A debit of every kind needs the wallet's available balance (balance less its holds), as the seed
 * says: an operator's typo must not move money the wallet does not hold. Only money the payment
 * provider takes back by itself goes below zero as a receivable (book-stripe-reversal.ts); an
 * operator debit never does, so it never spends money already spent and claws back nothing.
 */
import { sql } from 'drizzle-orm';
import { FaucetError } from '../wire/errors.ts';
import { formatUsd, negateUsd, type Usd } from '../money/index.ts';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';
import { postTransaction } from './post-transaction.ts';

export const adjustmentKinds = ['adjustment', 'refund', 'chargeback'] as const;
export type AdjustmentKind = (typeof adjustmentKinds)[number];
export type AdjustmentDirection = 'credit' | 'debit';

const counterAccount: Record<AdjustmentKind, string> = {
  adjustment: 'platform_adjustments',
  refund: 'payment_clearing',
  chargeback: 'payment_clearing',
};

export interface AdjustWalletInput {
  walletId: string;
  kind: AdjustmentKind;
  direction: AdjustmentDirection;
  amount: Usd;
  reason: string;
  /** Scoped to the wallet: the same key with the same body replays, with another body is a conflict. */
  idempotencyKey?: string | null;
  requestId: string;
}

export interface Adjustment {
  transaction_id: string;
  wallet_id: string;
  kind: AdjustmentKind;
  direction: AdjustmentDirection;
  amount_usd: string;
  reason: string;
  idempotency_key: string | null;
  created_at: string;
}

export interface AdjustWalletResult {
  adjustment: Adjustment;
  /** True when this is the replay of an earlier request with the same idempotency key. */
  replayed: boolean;
}

/** The counter-account of the adjustment; only user and developer wallets are adjusted this way. */
async function counterAccountId(db: SqlDatabase, walletId: string, kind: AdjustmentKind): Promise<string> {
  const row = await queryOne<{ target_kind: string | null; counter_id: string }>(
    db,
    sql`select (select kind from wallets where id = ${walletId}::uuid) as target_kind,
               faucet_system_wallet(${counterAccount[kind]}) as counter_id`,
  );
  if (row.target_kind !== 'user' && row.target_kind !== 'developer') throw new FaucetError('not_found', 'wallet not found');
  return row.counter_id;
}

export async function adjustWallet(db: SqlDatabase, input: AdjustWalletInput): Promise<AdjustWalletResult> {
  requireUuid(input.walletId, 'wallet');
  const request = {
    wallet_id: input.walletId,
    kind: input.kind,
    direction: input.direction,
    amount_usd: formatUsd(input.amount),
    reason: input.reason,
    idempotency_key: input.idempotencyKey ?? null,
  };
  const walletAmount = input.direction === 'credit' ? input.amount : negateUsd(input.amount);
  const counterId = await counterAccountId(db, input.walletId, input.kind);
  const idempotencyKey = input.idempotencyKey ? `adjustment:${input.walletId}:${input.idempotencyKey}` : null;
  const audit = { actorType: 'admin', action: `wallet.${input.kind}`, targetType: 'wallet', targetId: input.walletId } as const;
  const result = await postTransaction(db, {
    kind: input.kind,
    entries: [
      { walletId: input.walletId, amount: walletAmount },
      { walletId: counterId, amount: negateUsd(walletAmount) },
    ],
    idempotencyKey,
    requestId: input.requestId,
    reason: input.reason,
    metadata: { request },
    audit,
  });
  if (result.outcome === 'insufficient_balance') {
    throw new FaucetError('insufficient_balance', "the debit exceeds the wallet's available balance");
  }
  // jsonb does not keep key order: compare field by field.
  const first = (result.metadata.request ?? {}) as Record<string, unknown>;
  const sameBody = Object.entries(request).every(([key, value]) => first[key] === value);
  if (result.outcome === 'duplicate' && !sameBody) {
    throw new FaucetError('conflict', 'this idempotency key was used with a different request body');
  }
  return {
    adjustment: { ...request, transaction_id: result.transactionId, created_at: result.createdAt.toISOString() },
    replayed: result.outcome === 'duplicate',
  };
}
