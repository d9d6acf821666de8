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

/** The platform's own accounts (wallets without an owner). */
export const systemAccounts = ['platform_revenue', 'platform_upstream_payable', 'payment_clearing', 'platform_adjustments'] as const;
export type SystemAccount = (typeof systemAccounts)[number];
