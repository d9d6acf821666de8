/**
 * An app's per-end-user limits (docs/developers.md): spend per day and per month in USD and requests
 * per minute, each null for "no limit". Amounts are parsed by the money module (wire shape, > 0), the
 * rate is a whole number up to a sane maximum. Enforced by the gateway, stored here.
 */
import { formatUsd, parseWireAmount } from '../money/index.ts';
import { FaucetError } from '../wire/errors.ts';

/** Far beyond what one person at a keyboard sends; a larger number is a typo, not a policy. */
export const maxRequestsPerMinute = 10_000;

export interface AppLimitsInput {
  spend_per_day_usd?: string | null;
  spend_per_month_usd?: string | null;
  requests_per_minute?: number | null;
}

/** Parsed limits: `undefined` = not given (keep / none), `null` = no limit. */
export interface AppLimits {
  spendPerDayUsd: string | null | undefined;
  spendPerMonthUsd: string | null | undefined;
  requestsPerMinute: number | null | undefined;
}

function spend(value: string | null | undefined, field: string): string | null | undefined {
  if (value === undefined || value === null) return value;
  return formatUsd(parseWireAmount(value, { field: `limits.${field}`, positive: true }));
}

function rate(value: number | null | undefined): number | null | undefined {
  if (value === undefined || value === null) return value;
  if (!Number.isSafeInteger(value) || value < 1 || value > maxRequestsPerMinute) {
    throw new FaucetError('invalid_request', `limits.requests_per_minute must be a whole number from 1 to ${maxRequestsPerMinute}`);
  }
  return value;
}

export function parseAppLimits(input: AppLimitsInput = {}): AppLimits {
  return {
    spendPerDayUsd: spend(input.spend_per_day_usd, 'spend_per_day_usd'),
    spendPerMonthUsd: spend(input.spend_per_month_usd, 'spend_per_month_usd'),
    requestsPerMinute: rate(input.requests_per_minute),
  };
}
