/** Top-up amounts: whole cents between the documented limits (docs/payments.md). */
import { FaucetError } from '#shared/wire/errors.ts';
import { compareUsd, parseWireAmount, usdFromUnits, usdToUnits, type Usd } from '#shared/money/index.ts';

export const MIN_TOP_UP_USD = '1.00000000';
export const MAX_TOP_UP_USD = '1000.00000000';
const UNITS_PER_CENT = 1_000_000n; // 1e-8 USD units in one cent

/** Parses `amount_usd` and returns it in cents (Stripe's minor unit) with the amount itself. */
export function parseTopUpAmount(value: unknown): { amount: Usd; cents: number } {
  const amount = parseWireAmount(value, { positive: true });
  if (compareUsd(amount, parseWireAmount(MIN_TOP_UP_USD)) < 0 || compareUsd(amount, parseWireAmount(MAX_TOP_UP_USD)) > 0) {
    throw new FaucetError('invalid_request', `amount_usd must be between ${MIN_TOP_UP_USD} and ${MAX_TOP_UP_USD}`);
  }
  const units = usdToUnits(amount);
  if (units % UNITS_PER_CENT !== 0n) throw new FaucetError('invalid_request', 'amount_usd must be whole cents');
  return { amount, cents: Number(units / UNITS_PER_CENT) };
}

/** A top-up's amount from its cents, as the checkout session row keeps it. */
export function topUpAmountOfCents(cents: number): Usd {
  return usdFromUnits(BigInt(cents) * UNITS_PER_CENT);
}
