/**
 * A debit that is booked even below zero: chargebacks, provider refunds and revenue clawbacks happen
 * whether or not the money is still there. The part below zero is recorded as a receivable
 * (`receivables`, reported by reconciliation) and flags the wallet, which then refuses every call
 * that needs a hold until it is topped up (faucet_post_receivable_debit, migrations/0007).
 */
import { sql } from 'drizzle-orm';
import { formatUsd, parseDatabaseAmount, type Usd } from '../money/index.ts';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';
import type { TransactionKind } from './entry-kinds.ts';
import type { AuditRecord } from './post-transaction.ts';

export interface ReceivableDebitInput {
  kind: Extract<TransactionKind, 'refund' | 'chargeback' | 'revenue_clawback'>;
  walletId: string;
  counterWalletId: string;
  amount: Usd;
  idempotencyKey: string;
  requestId: string;
  reason?: string | null;
  metadata?: Record<string, unknown>;
  audit?: AuditRecord;
}

export interface ReceivableDebitResult {
  outcome: 'posted' | 'duplicate';
  transactionId: string;
  metadata: Record<string, unknown>;
  createdAt: Date;
  /** The part of the amount the wallet no longer held when the debit was booked (= its receivable). */
  spent: Usd;
}

interface Row {
  outcome: 'posted' | 'duplicate';
  transaction_id: string;
  metadata: Record<string, unknown>;
  created_at: Date | string;
}

export async function postReceivableDebit(db: SqlDatabase, input: ReceivableDebitInput): Promise<ReceivableDebitResult> {
  const post = sql`select * from faucet_post_receivable_debit(${input.kind}, ${input.idempotencyKey}, ${input.requestId},
      ${input.reason ?? null}, ${JSON.stringify(input.metadata ?? {})}::jsonb, ${requireUuid(input.walletId, 'wallet')}::uuid,
      ${requireUuid(input.counterWalletId, 'wallet')}::uuid, ${formatUsd(input.amount)}::numeric)`;
  const { audit } = input;
  const row = await queryOne<Row>(
    db,
    audit
      ? sql`with posted as (${post}),
          audited as (
            insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
            select ${audit.actorType}, ${audit.actorId ?? null}, ${audit.action}, ${audit.targetType}, ${audit.targetId},
                   ${input.requestId}, jsonb_build_object('transaction_id', posted.transaction_id,
                   'receivable_usd', posted.metadata ->> 'receivable_usd')
            from posted where posted.outcome = 'posted')
          select * from posted`
      : post,
  );
  return {
    outcome: row.outcome,
    transactionId: row.transaction_id,
    metadata: row.metadata ?? {},
    createdAt: new Date(row.created_at),
    spent: parseDatabaseAmount(String(row.metadata?.spent_usd ?? '0.00000000')),
  };
}
