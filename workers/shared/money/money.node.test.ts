import { describe, expect, it } from 'vitest';
import { FaucetError } from '../wire/errors.ts';
import {
  addUsd,
  applyBasisPoints,
  compareUsd,
  formatUsd,
  multiplyByAmountRatio,
  parseDatabaseAmount,
  parseUsdSetting,
  parseWireAmount,
  priceTokensExact,
  roundToScale,
  subtractUsd,
  sumExactThenRound,
  usdFromUnits,
  usdToUnits,
} from './index.ts';

describe('parseUsdSetting', () => {
  const fallback = usdFromUnits(7n);
  it.each([
    ['1', 100_000_000n],
    ['0.25', 25_000_000n],
    ['12.00000001', 1_200_000_001n],
  ])('reads %s exactly', (text, units) => {
    expect(usdToUnits(parseUsdSetting(text, fallback))).toBe(units);
  });

  it.each([[undefined], [''], ['1e3'], ['-1'], ['0.123456789'], [' 1'], ['1.'], [1]])('falls back for %j', (value) => {
    expect(parseUsdSetting(value, fallback)).toBe(fallback);
  });
});

describe('parseWireAmount', () => {
  it.each([
    ['10.00000000', 1_000_000_000n],
    ['0.00000001', 1n],
    ['0.00000000', 0n],
    ['999999999999.99999999', 99_999_999_999_999_999_999n],
  ])('accepts %s', (text, units) => {
    expect(usdToUnits(parseWireAmount(text))).toBe(units);
  });

  it.each([
    ['a JSON number', 10],
    ['a float', 0.1],
    ['too few digits', '10.0'],
    ['no fraction', '10'],
    ['nine fractional digits', '1.000000001'],
    ['an exponent', '1e2'],
    ['an exponent with a fraction', '1.00000000e2'],
    ['a negative amount', '-1.00000000'],
    ['a plus sign', '+1.00000000'],
    ['whitespace', ' 1.00000000'],
    ['a comma', '1,00000000'],
    ['thirteen integer digits', '1000000000000.00000000'],
    ['null', null],
    ['a bigint-looking string', '100000000n'],
  ])('refuses %s', (_label, value) => {
    expect(() => parseWireAmount(value)).toThrowError(FaucetError);
    try {
      parseWireAmount(value);
    } catch (error) {
      expect(FaucetError.isInstance(error) && error.code).toBe('invalid_request');
    }
  });

  it('refuses zero when a positive amount is required', () => {
    expect(() => parseWireAmount('0.00000000', { positive: true })).toThrowError(/greater than zero/);
  });
});

describe('formatUsd', () => {
  it.each([
    [0n, '0.00000000'],
    [1n, '0.00000001'],
    [1_000_000_000n, '10.00000000'],
    [-1_234n, '-0.00001234'],
    [-100_000_001n, '-1.00000001'],
  ])('formats %s units as %s', (units, text) => {
    expect(formatUsd(usdFromUnits(units))).toBe(text);
  });

  it('round-trips every wire amount', () => {
    for (const text of ['0.00000000', '0.12345678', '42.00000001', '123456789012.00000000']) {
      expect(formatUsd(parseWireAmount(text))).toBe(text);
    }
  });
});

describe('parseDatabaseAmount', () => {
  it('reads signed numeric(20,8) values', () => {
    expect(usdToUnits(parseDatabaseAmount('-3.50000000'))).toBe(-350_000_000n);
    expect(usdToUnits(parseDatabaseAmount('0.00000002'))).toBe(2n);
  });

  it('refuses anything else', () => {
    expect(() => parseDatabaseAmount('3.5')).toThrowError();
  });
});

describe('arithmetic', () => {
  it('adds and subtracts exactly where floats drift', () => {
    const tenth = parseWireAmount('0.10000000');
    const sum = addUsd(tenth, parseWireAmount('0.20000000'));
    expect(formatUsd(sum)).toBe('0.30000000');
    expect(formatUsd(subtractUsd(sum, parseWireAmount('0.30000000')))).toBe('0.00000000');
  });

  it('compares amounts', () => {
    expect(compareUsd(usdFromUnits(1n), usdFromUnits(2n))).toBe(-1);
    expect(compareUsd(usdFromUnits(2n), usdFromUnits(2n))).toBe(0);
  });

  it('rounds up toward +infinity and down toward -infinity', () => {
    // 1 token at 0.15 USD per million = 0.00000015 exactly; 1 token at 0.075 = 0.000000075.
    const half = priceTokensExact(parseWireAmount('0.07500000'), 1n);
    expect(formatUsd(roundToScale(half, 'up'))).toBe('0.00000008');
    expect(formatUsd(roundToScale(half, 'down'))).toBe('0.00000007');
  });

  it('prices tokens per million and rounds the sum once', () => {
    const price = parseWireAmount('0.15000000');
    // 3 tokens × 0.15/1e6 = 0.00000045 exactly
    expect(formatUsd(roundToScale(priceTokensExact(price, 3n), 'up'))).toBe('0.00000045');
    // two halves of a unit sum to one unit when rounded once, to two when rounded separately
    const halfUnit = priceTokensExact(parseWireAmount('0.50000000'), 1n); // 0.0000005 → 0.00000050 exact
    expect(formatUsd(sumExactThenRound([halfUnit, halfUnit], 'up'))).toBe('0.00000100');
    const tiny = priceTokensExact(parseWireAmount('0.00500000'), 1n); // 0.000000005
    expect(formatUsd(sumExactThenRound([tiny, tiny], 'up'))).toBe('0.00000001');
  });

  it('applies basis points with the requested rounding', () => {
    const amount = usdFromUnits(3n);
    expect(formatUsd(applyBasisPoints(amount, 5_000, 'down'))).toBe('0.00000001');
    expect(formatUsd(applyBasisPoints(amount, 5_000, 'up'))).toBe('0.00000002');
    expect(formatUsd(applyBasisPoints(usdFromUnits(1_000_000n), 2_000, 'up'))).toBe('0.00200000');
    expect(() => applyBasisPoints(amount, -1, 'up')).toThrowError(RangeError);
  });

  it('multiplies by a ratio of two amounts exactly, rounding only the result', () => {
    const usd = parseWireAmount;
    // 1 × 2/3 = 0.666666666… → down 0.66666666, up 0.66666667
    expect(formatUsd(multiplyByAmountRatio(usd('1.00000000'), usd('2.00000000'), usd('3.00000000'), 'down'))).toBe('0.66666666');
    expect(formatUsd(multiplyByAmountRatio(usd('1.00000000'), usd('2.00000000'), usd('3.00000000'), 'up'))).toBe('0.66666667');
    // exact results are not moved by either rounding
    expect(formatUsd(multiplyByAmountRatio(usd('7.00000000'), usd('0.25000000'), usd('1.00000000'), 'up'))).toBe('1.75000000');
    // products beyond 2^64 units stay exact (bigint): 99 999 999.99999999 × 1/3
    expect(formatUsd(multiplyByAmountRatio(usd('99999999.99999999'), usd('0.00000001'), usd('0.00000003'), 'down'))).toBe(
      '33333333.33333333',
    );
    expect(() => multiplyByAmountRatio(usd('1.00000000'), usd('1.00000000'), usd('0.00000000'), 'down')).toThrowError(RangeError);
  });
});

describe('usdToUnits', () => {
  it('refuses an unrounded amount instead of rounding silently', () => {
    expect(() => usdToUnits(priceTokensExact(parseWireAmount('0.07500000'), 1n))).toThrowError(RangeError);
    expect(usdToUnits(priceTokensExact(parseWireAmount('1.00000000'), 1n))).toBe(100n);
  });
});
