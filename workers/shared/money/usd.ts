/**
 * USD amounts as dinero.js objects with a bigint calculator at a fixed scale of 8 (1 unit =
 * 0.00000001 USD, the `numeric(20,8)` of the database). Every calculation on an amount in Faucet
 * goes through this module; nothing else adds, subtracts or multiplies money.
 */
import {
  add,
  compare,
  dinero,
  down,
  isNegative,
  isZero,
  multiply,
  subtract,
  toSnapshot,
  transformScale,
  up,
  USD,
  type Dinero,
} from 'dinero.js/bigint';

export type Usd = Dinero<bigint, 'USD'>;

/** Fractional digits of every stored and transmitted amount. */
export const USD_SCALE = 8n;

/** Rounding direction when an exact result has more than 8 fractional digits. */
export type Rounding = 'up' | 'down';

/** An amount from a count of 1e-8 USD units. */
export function usdFromUnits(units: bigint): Usd {
  return dinero({ amount: units, currency: USD as { code: 'USD'; base: bigint; exponent: bigint }, scale: USD_SCALE });
}

/** The count of 1e-8 USD units of an amount (the scale is normalised to 8 first; exact amounts only). */
export function usdToUnits(amount: Usd): bigint {
  const snapshot = toSnapshot(amount);
  if (snapshot.scale === USD_SCALE) return snapshot.amount;
  if (snapshot.scale < USD_SCALE) return snapshot.amount * 10n ** (USD_SCALE - snapshot.scale);
  const ceiling = toSnapshot(roundToScale(amount, 'up')).amount;
  if (ceiling !== toSnapshot(roundToScale(amount, 'down')).amount) {
    throw new RangeError('amount has more than 8 fractional digits: round it first');
  }
  return ceiling;
}

export const zeroUsd = (): Usd => usdFromUnits(0n);

export function addUsd(...amounts: Usd[]): Usd {
  return amounts.reduce((sum, amount) => add(sum, amount), zeroUsd());
}

export function subtractUsd(minuend: Usd, subtrahend: Usd): Usd {
  return subtract(minuend, subtrahend);
}

export function negateUsd(amount: Usd): Usd {
  return subtract(zeroUsd(), amount);
}

export function compareUsd(left: Usd, right: Usd): -1 | 0 | 1 {
  return compare(left, right) as -1 | 0 | 1;
}

export const isNegativeUsd = (amount: Usd): boolean => isNegative(amount);
export const isZeroUsd = (amount: Usd): boolean => isZero(amount);

/** Round an exact amount of any scale to 8 digits: `up` is toward +∞ (ceil), `down` toward −∞ (floor). */
export function roundToScale(amount: Usd, rounding: Rounding): Usd {
  const scaled = transformScale(amount, USD_SCALE, rounding === 'up' ? up : down);
  return usdFromUnits(toSnapshot(scaled).amount);
}

/**
 * `amount × numerator / 10^denominatorDigits`, rounded to 8 digits. Used for per-million token
 * prices (denominatorDigits 6) and basis points (denominatorDigits 4).
 */
export function multiplyByRatio(amount: Usd, numerator: bigint, denominatorDigits: bigint, rounding: Rounding): Usd {
  if (numerator < 0n) throw new RangeError('ratio numerator must not be negative');
  return roundToScale(multiply(amount, { amount: numerator, scale: denominatorDigits }), rounding);
}

/** `amount × basisPoints / 10 000`, rounded to 8 digits. */
export function applyBasisPoints(amount: Usd, basisPoints: number, rounding: Rounding): Usd {
  if (!Number.isSafeInteger(basisPoints) || basisPoints < 0) throw new RangeError('basis points must be a non-negative integer');
  return multiplyByRatio(amount, BigInt(basisPoints), 4n, rounding);
}

/** Cost of `tokens` at a price per million tokens, exact (not yet rounded); add several, then round once. */
export function priceTokensExact(pricePerMillion: Usd, tokens: bigint): Usd {
  if (tokens < 0n) throw new RangeError('token count must not be negative');
  return multiply(pricePerMillion, { amount: tokens, scale: 6n });
}

/** Sum of exact amounts of possibly different scales, then rounded to 8 digits. */
export function sumExactThenRound(amounts: Usd[], rounding: Rounding): Usd {
  const exact = amounts.reduce((sum, amount) => add(sum, amount), zeroUsd());
  return roundToScale(exact, rounding);
}

/**
 * `amount × numerator / denominator` for a ratio of two amounts (e.g. a share observed over past
 * usage), rounded to 8 digits: exact integer arithmetic on 1e-8 units, no intermediate rounding.
 */
export function multiplyByAmountRatio(amount: Usd, numerator: Usd, denominator: Usd, rounding: Rounding): Usd {
  const top = usdToUnits(amount) * usdToUnits(numerator);
  const bottom = usdToUnits(denominator);
  if (bottom <= 0n || usdToUnits(numerator) < 0n)
    throw new RangeError('ratio must have a positive denominator and a non-negative numerator');
  const quotient = top / bottom;
  const exact = quotient * bottom === top;
  // bigint division truncates toward zero; floor and ceil from there.
  if (exact) return usdFromUnits(quotient);
  const floor = top < 0n ? quotient - 1n : quotient;
  return usdFromUnits(rounding === 'down' ? floor : floor + 1n);
}
