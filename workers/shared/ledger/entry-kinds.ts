/** Kinds of ledger transactions. Corrections are new transactions, never edits of old ones. */
export const transactionKinds = [
  'seed_opening_balance',
  'usage',
  'adjustment',
  'refund',
  'chargeback',
  'top_up',
  'payout',
  'chargeback_reversal',
  'revenue_clawback',
  'revenue_clawback_reversal',
] as const;
export type TransactionKind = (typeof transactionKinds)[number];
