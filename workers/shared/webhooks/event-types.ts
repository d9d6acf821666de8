/**
 * The events Faucet signs and sends to a developer's endpoints (docs/webhooks.md), each written by a
 * trigger in the transaction of the change it reports (migrations/functions/faucet_webhook_*.sql).
 */
export const webhookEventTypes = [
  /** An end user's balance went from at or above the app's low-balance threshold to below it. */
  'end_user.balance_low',
  /** An end user's spend in a period reached an app spend limit (or a call of theirs was refused by it). */
  'end_user.spend_limit_reached',
  /** A developer key's recorded upstream cost this month reached 80 % of its monthly budget. */
  'provider_key.budget_warning',
  /** … reached 100 %: the key takes no more developer_key calls this month. */
  'provider_key.budget_exhausted',
  'payout.pending',
  'payout.processing',
  'payout.paid',
  'payout.cancelled',
  'payout.rejected',
  /** Developer revenue clawed back after a chargeback or refund of spent money, and its reversal. */
  'clawback.booked',
  'clawback.reversed',
] as const;

/** What an endpoint may subscribe to: event types, or `*` for every type (present and future). */
export const subscribableEventTypes: readonly string[] = ['*', ...webhookEventTypes];
