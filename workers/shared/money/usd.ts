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

const usdCurrency = USD as { code: 'USD'; base: bigint; exponent: bigint };

/** An amount from a count of 1e-8 USD units. */
export function usdFromUnits(units: bigint): Usd {
  return usdAtScale(units, USD_SCALE);
}

/** `amount × 10^-scale` USD. */
function usdAtScale(amount: bigint, scale: bigint): Usd {
  return dinero({ amount, currency: usdCurrency, scale });
}

/*
 * The arithmetic below works on the scaled integers dinero holds (`amount × 10^-scale`) with plain
 * bigint operations: dinero's own functions rebuild their closures and re-check currencies on every
 * call, which made rating show in a gateway call's CPU profile. Each function gives the amount and
 * scale dinero's would (money.equivalence.node.test.ts compares them); an amount not in plain USD
 * (never made by this module) is left to dinero's functions, which refuse mixing currencies.
 */

/** An amount's scaled integer: `amount × 10^-scale` USD. */
interface Scaled {
  amount: bigint;
  scale: bigint;
}

/** The scaled integer of a USD amount; null for any other currency. */
function scaledUsd(value: Usd): Scaled | null {
  const snapshot = toSnapshot(value);
  const { code, base, exponent } = snapshot.currency;
  return code === 'USD' && base === 10n && exponent === 2n ? snapshot : null;
}

const powersOfTen = Array.from({ length: 32 }, (_, exponent) => 10n ** BigInt(exponent));
const tenTo = (exponent: bigint): bigint => powersOfTen[Number(exponent)] ?? 10n ** exponent;

/** `value` restated at a scale at least its own. */
const atScale = (value: Scaled, scale: bigint): bigint =>
  value.scale === scale ? value.amount : value.amount * tenTo(scale - value.scale);

/** `value` in 1e-8 units: ceil (`up`) or floor (`down`) when it has more digits; bigint division truncates toward zero. */
function unitsRounded(value: Scaled, rounding: Rounding): bigint {
  if (value.scale <= USD_SCALE) return atScale(value, USD_SCALE);
  const divisor = tenTo(value.scale - USD_SCALE);
  const quotient = value.amount / divisor;
  if (quotient * divisor === value.amount) return quotient;
  if (rounding === 'up') return value.amount > 0n ? quotient + 1n : quotient;
  return value.amount < 0n ? quotient - 1n : quotient;
}

/** `left + right` exactly, at the higher of their scales (as dinero's `add`). */
function plus(left: Scaled, right: Scaled): Scaled {
  // biome-ignore lint/complexity/useMathMinMax: Math.max throws on bigints.
  const scale = left.scale > right.scale ? left.scale : right.scale;
  return { amount: atScale(left, scale) + atScale(right, scale), scale };
}

/** The exact sum, from a zero at scale 8 (as `addUsd` always did); null if one is not USD. */
function exactSum(amounts: readonly Usd[]): Scaled | null {
  let sum: Scaled = { amount: 0n, scale: USD_SCALE };
  for (const amount of amounts) {
    const term = scaledUsd(amount);
    if (term === null) return null;
    sum = plus(sum, term);
  }
  return sum;
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
  const sum = exactSum(amounts);
  if (sum === null) return amounts.reduce((total, amount) => add(total, amount), zeroUsd());
  return usdAtScale(sum.amount, sum.scale);
}

export function subtractUsd(minuend: Usd, subtrahend: Usd): Usd {
  const left = scaledUsd(minuend);
  const right = scaledUsd(subtrahend);
  if (left === null || right === null) return subtract(minuend, subtrahend);
  const difference = plus(left, { amount: -right.amount, scale: right.scale });
  return usdAtScale(difference.amount, difference.scale);
}

export function negateUsd(amount: Usd): Usd {
  return subtractUsd(zeroUsd(), amount);
}

export function compareUsd(left: Usd, right: Usd): -1 | 0 | 1 {
  const a = scaledUsd(left);
  const b = scaledUsd(right);
  if (a === null || b === null) return compare(left, right) as -1 | 0 | 1;
  // biome-ignore lint/complexity/useMathMinMax: Math.max throws on bigints.
  const scale = a.scale > b.scale ? a.scale : b.scale;
  const difference = atScale(a, scale) - atScale(b, scale);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}

export const isNegativeUsd = (amount: Usd): boolean => isNegative(amount);
export const isZeroUsd = (amount: Usd): boolean => isZero(amount);

/** Round an exact amount of any scale to 8 digits: `up` is toward +∞ (ceil), `down` toward −∞ (floor). */
export function roundToScale(amount: Usd, rounding: Rounding): Usd {
  const scaled = scaledUsd(amount);
  if (scaled === null) return usdFromUnits(toSnapshot(transformScale(amount, USD_SCALE, rounding === 'up' ? up : down)).amount);
  return usdFromUnits(unitsRounded(scaled, rounding));
}

/**
 * `amount × numerator / 10^denominatorDigits`, rounded to 8 digits. Used for per-million token
 * prices (denominatorDigits 6) and basis points (denominatorDigits 4).
 */
export function multiplyByRatio(amount: Usd, numerator: bigint, denominatorDigits: bigint, rounding: Rounding): Usd {
  if (numerator < 0n) throw new RangeError('ratio numerator must not be negative');
  const scaled = scaledUsd(amount);
  if (scaled === null) return roundToScale(multiply(amount, { amount: numerator, scale: denominatorDigits }), rounding);
  return usdFromUnits(unitsRounded({ amount: scaled.amount * numerator, scale: scaled.scale + denominatorDigits }, rounding));
}

/** `amount × basisPoints / 10 000`, rounded to 8 digits. */
export function applyBasisPoints(amount: Usd, basisPoints: number, rounding: Rounding): Usd {
  if (!Number.isSafeInteger(basisPoints) || basisPoints < 0) throw new RangeError('basis points must be a non-negative integer');
  return multiplyByRatio(amount, BigInt(basisPoints), 4n, rounding);
}

/** Cost of `tokens` at a price per million tokens, exact (not yet rounded); add several, then round once. */
export function priceTokensExact(pricePerMillion: Usd, tokens: bigint): Usd {
  if (tokens < 0n) throw new RangeError('token count must not be negative');
  const price = scaledUsd(pricePerMillion);
  if (price === null) return multiply(pricePerMillion, { amount: tokens, scale: 6n });
  return usdAtScale(price.amount * tokens, price.scale + 6n);
}

/**
 * The cost of several token counts, each at its price per million, summed exactly and rounded once:
 * `sumExactThenRound` of each line's `priceTokensExact`, without an amount made per line (every
 * call is rated with seven lines, most of them zero tokens).
 */
export function priceTokensThenRound(lines: ReadonlyArray<readonly [pricePerMillion: Usd, tokens: bigint]>, rounding: Rounding): Usd {
  let sum: Scaled = { amount: 0n, scale: USD_SCALE };
  for (const [pricePerMillion, tokens] of lines) {
    if (tokens < 0n) throw new RangeError('token count must not be negative');
    const price = scaledUsd(pricePerMillion);
    if (price === null) {
      return sumExactThenRound(
        lines.map(([linePrice, lineTokens]) => priceTokensExact(linePrice, lineTokens)),
        rounding,
      );
    }
    sum = plus(sum, { amount: price.amount * tokens, scale: price.scale + 6n });
  }
  return usdFromUnits(unitsRounded(sum, rounding));
}

/** Sum of exact amounts of possibly different scales, then rounded to 8 digits. */
export function sumExactThenRound(amounts: Usd[], rounding: Rounding): Usd {
  const sum = exactSum(amounts);
  if (sum === null)
    return roundToScale(
      amounts.reduce((total, amount) => add(total, amount), zeroUsd()),
      rounding,
    );
  return usdFromUnits(unitsRounded(sum, rounding));
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
