/** Post one balanced transaction of any kind: the building block of adjustments, top-ups and payouts. */
import { sql } from 'drizzle-orm';
import { FaucetError } from '../wire/errors.ts';
import { addUsd, formatUsd, isZeroUsd, type Usd } from '../money/index.ts';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';
import type { TransactionKind } from './entry-kinds.ts';

export interface LedgerEntryInput {
  walletId: string;
  /** Positive credits the wallet, negative debits it. */
  amount: Usd;
}

export interface PostTransactionInput {
  kind: TransactionKind;
  entries: LedgerEntryInput[];
  /** A second post with the same key moves no money and returns the first transaction. */
  idempotencyKey?: string | null;
  requestId?: string | null;
  reason?: string | null;
  metadata?: Record<string, unknown>;
  /** Written in the same statement when the transaction is posted (not on a duplicate). */
  audit?: AuditRecord;
}

export interface AuditRecord {
  actorType: 'admin' | 'developer' | 'system' | 'user';
  actorId?: string | null;
  action: string;
  targetType: string;
  targetId: string;
}

export type PostTransactionResult =
  | { outcome: 'posted' | 'duplicate'; transactionId: string; metadata: Record<string, unknown>; createdAt: Date }
  | { outcome: 'insufficient_balance' };

interface Row {
  outcome: 'posted' | 'duplicate' | 'insufficient_balance';
  transaction_id: string | null;
  metadata: Record<string, unknown> | null;
  created_at: Date | string | null;
}

/**
 * One statement: locks the wallets in the global order, refuses a debit below zero (holds count),
 * appends the entries and moves the cached balances, all or nothing.
 */
export async function postTransaction(db: SqlDatabase, input: PostTransactionInput): Promise<PostTransactionResult> {
  if (input.entries.length < 2) throw new FaucetError('invalid_request', 'a transaction needs at least two entries');
  if (!isZeroUsd(addUsd(...input.entries.map((entry) => entry.amount)))) {
    throw new FaucetError('invalid_request', 'entries of a transaction must sum to zero');
  }
  const walletIds = `{${input.entries.map((entry) => requireUuid(entry.walletId, 'wallet')).join(',')}}`;
  const amounts = `{${input.entries.map((entry) => formatUsd(entry.amount)).join(',')}}`;
  const post = sql`select * from faucet_post_transaction(${input.kind}, ${input.idempotencyKey ?? null}, ${input.requestId ?? null},
      ${input.reason ?? null}, ${JSON.stringify(input.metadata ?? {})}::jsonb, ${walletIds}::uuid[], ${amounts}::numeric[])`;
  const { audit } = input;
  const row = await queryOne<Row>(
    db,
    audit
      ? sql`with posted as (${post}),
          audited as (
            insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
            select ${audit.actorType}, ${audit.actorId ?? null}, ${audit.action}, ${audit.targetType}, ${audit.targetId},
                   ${input.requestId ?? null}, jsonb_build_object('transaction_id', posted.transaction_id)
            from posted where posted.outcome = 'posted')
          select * from posted`
      : post,
  );
  if (row.outcome === 'insufficient_balance') return { outcome: 'insufficient_balance' };
  return {
    outcome: row.outcome,
    transactionId: row.transaction_id as string,
    metadata: row.metadata ?? {},
    createdAt: new Date(row.created_at as string),
  };
}
