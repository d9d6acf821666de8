/**
 * The money functions compute on dinero's scaled integers with plain bigint arithmetic (usd.ts). Here
 * each is compared with the dinero.js expression it replaced, kept below as the reference: the same
 * amount at the same scale in the same currency, or the same error, for every generated input.
 */
import { add, compare, dinero, down, EUR, multiply, subtract, toSnapshot, transformScale, up, USD, type Dinero } from 'dinero.js/bigint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addUsd,
  applyBasisPoints,
  compareUsd,
  multiplyByRatio,
  negateUsd,
  priceTokensExact,
  priceTokensThenRound,
  roundToScale,
  subtractUsd,
  sumExactThenRound,
  type Rounding,
  type Usd,
} from './index.ts';

const usdAt = (amount: bigint, scale: bigint): Usd =>
  dinero({ amount, currency: USD as { code: 'USD'; base: bigint; exponent: bigint }, scale });

/** The bodies of usd.ts before it computed on bigints directly: dinero's generic functions. */
const reference = {
  add: (...amounts: Usd[]): Usd => amounts.reduce((sum, amount) => add(sum, amount), usdAt(0n, 8n)),
  subtract: (minuend: Usd, subtrahend: Usd): Usd => subtract(minuend, subtrahend),
  roundToScale: (amount: Usd, rounding: Rounding): Usd =>
    usdAt(toSnapshot(transformScale(amount, 8n, rounding === 'up' ? up : down)).amount, 8n),
  multiplyByRatio: (amount: Usd, numerator: bigint, digits: bigint, rounding: Rounding): Usd =>
    reference.roundToScale(multiply(amount, { amount: numerator, scale: digits }), rounding),
  priceTokensExact: (price: Usd, tokens: bigint): Usd => multiply(price, { amount: tokens, scale: 6n }),
  sumExactThenRound: (amounts: Usd[], rounding: Rounding): Usd => reference.roundToScale(reference.add(...amounts), rounding),
};

/** What an amount is, all of it: the scaled integer and the currency (a result must match in each). */
const exactly = (amount: Dinero<bigint, string>) => {
  const { amount: units, scale, currency } = toSnapshot(amount);
  return { units, scale, currency: { ...currency } };
};

/** Amounts of every sign and size at scales 0 to 20, most of them at 8 (as stored) or 14 (a token cost). */
const amount = fc
  .tuple(
    fc.oneof(
      fc.bigInt({ min: -(10n ** 22n), max: 10n ** 22n }),
      fc.bigInt({ min: -1_000n, max: 1_000n }),
      fc.constantFrom(0n, 1n, -1n, 5n, -5n, 99_999_999n, 100_000_000n, 100_000_001n, -100_000_001n),
    ),
    fc.oneof(fc.constantFrom(8n, 14n), fc.bigInt({ min: 0n, max: 20n })),
  )
  .map(([units, scale]) => usdAt(units, scale));
const rounding = fc.constantFrom<Rounding>('up', 'down');
const tokens = fc.oneof(fc.bigInt({ min: 0n, max: 10_000_000n }), fc.constantFrom(0n, 1n, 999_999n, 1_000_000n, 1_000_001n));
const runs = { numRuns: 2_000 };

describe('the money functions agree with the dinero expressions they replaced', () => {
  it('addUsd: the same sum at the same scale', () => {
    fc.assert(
      fc.property(fc.array(amount, { maxLength: 8 }), (amounts) => {
        expect(exactly(addUsd(...amounts))).toEqual(exactly(reference.add(...amounts)));
      }),
      runs,
    );
  });

  it('subtractUsd and negateUsd: the same difference at the same scale', () => {
    fc.assert(
      fc.property(amount, amount, (minuend, subtrahend) => {
        expect(exactly(subtractUsd(minuend, subtrahend))).toEqual(exactly(reference.subtract(minuend, subtrahend)));
        expect(exactly(negateUsd(subtrahend))).toEqual(exactly(reference.subtract(usdAt(0n, 8n), subtrahend)));
      }),
      runs,
    );
  });

  it('compareUsd: the same order, across scales and signs', () => {
    fc.assert(
      fc.property(amount, amount, (left, right) => {
        expect(compareUsd(left, right)).toBe(compare(left, right));
        expect(compareUsd(left, left)).toBe(0);
      }),
      runs,
    );
  });

  it('roundToScale: the same ceiling and floor, negative amounts included', () => {
    fc.assert(
      fc.property(amount, rounding, (value, direction) => {
        expect(exactly(roundToScale(value, direction))).toEqual(exactly(reference.roundToScale(value, direction)));
      }),
      runs,
    );
  });

  it('multiplyByRatio and applyBasisPoints: the same rounded product', () => {
    fc.assert(
      fc.property(amount, fc.nat({ max: 200_000 }), fc.bigInt({ min: 0n, max: 12n }), rounding, (value, numerator, digits, direction) => {
        const ratio = BigInt(numerator);
        expect(exactly(multiplyByRatio(value, ratio, digits, direction))).toEqual(
          exactly(reference.multiplyByRatio(value, ratio, digits, direction)),
        );
        expect(exactly(applyBasisPoints(value, numerator, direction))).toEqual(
          exactly(reference.multiplyByRatio(value, ratio, 4n, direction)),
        );
      }),
      runs,
    );
  });

  it('priceTokensExact, sumExactThenRound and priceTokensThenRound: the same exact costs and the same rounded sum', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(amount, tokens), { maxLength: 7 }), rounding, (lines, direction) => {
        const exact = lines.map(([price, count]) => priceTokensExact(price, count));
        const referenceExact = lines.map(([price, count]) => reference.priceTokensExact(price, count));
        expect(exact.map(exactly)).toEqual(referenceExact.map(exactly));
        const rounded = exactly(reference.sumExactThenRound(referenceExact, direction));
        expect(exactly(sumExactThenRound(exact, direction))).toEqual(rounded);
        expect(exactly(priceTokensThenRound(lines, direction))).toEqual(rounded);
      }),
      runs,
    );
  });

  it('refuses negative token counts and ratios as before', () => {
    const price = usdAt(15_000_000n, 8n);
    expect(() => priceTokensExact(price, -1n)).toThrowError(new RangeError('token count must not be negative'));
    expect(() =>
      priceTokensThenRound(
        [
          [price, 1n],
          [price, -1n],
        ],
        'up',
      ),
    ).toThrowError(new RangeError('token count must not be negative'));
    expect(() => multiplyByRatio(price, -1n, 4n, 'up')).toThrowError(new RangeError('ratio numerator must not be negative'));
  });

  it('leaves another currency to dinero: mixing is refused with its error, a lone amount keeps its currency', () => {
    const euro = dinero({ amount: 5n, currency: EUR, scale: 8n }) as unknown as Usd;
    const dollar = usdAt(5n, 8n);
    const mixing = /\[Dinero\.js\] Objects must have the same currency\./;
    expect(() => addUsd(dollar, euro)).toThrowError(mixing);
    expect(() => subtractUsd(dollar, euro)).toThrowError(mixing);
    expect(() => compareUsd(dollar, euro)).toThrowError(mixing);
    expect(() => sumExactThenRound([dollar, euro], 'up')).toThrowError(mixing);
    expect(() => priceTokensThenRound([[euro, 1n]], 'up')).toThrowError(mixing);
    expect(exactly(priceTokensExact(euro, 3n))).toEqual(exactly(reference.priceTokensExact(euro, 3n)));
    expect(exactly(roundToScale(euro, 'up'))).toEqual(exactly(reference.roundToScale(euro, 'up')));
  });
});
