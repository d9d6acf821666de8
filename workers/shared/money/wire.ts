/**
 * Amounts on the wire and in the database: decimal strings with exactly 8 fractional digits.
 * Parsing is strict on purpose: a JSON number (a float), an exponent, a sign, or a 9th digit is
 * refused rather than rounded, so a client can never make the server guess an amount.
 */
// The OpenAPI-extended zod: a schema built before the extension has no `.openapi()`, so routes
// describing these amounts would throw in any module graph that loads money first.
import { z } from '@hono/zod-openapi';
import { FaucetError } from '../wire/errors.ts';
import { isNegativeUsd, isZeroUsd, negateUsd, usdFromUnits, usdToUnits, type Usd } from './usd.ts';

/** The one accepted wire shape: `"10.00000000"`. At most 12 integer digits (numeric(20,8)). */
export const WIRE_AMOUNT_PATTERN = /^\d{1,12}\.\d{8}$/;
/** What PostgreSQL returns for `numeric(20,8)`, signed: ledger accounts of the platform go negative. */
const DATABASE_AMOUNT_PATTERN = /^(-?)(\d{1,12})\.(\d{8})$/;

function unitsFromDigits(integer: string, fraction: string): bigint {
  return BigInt(integer) * 100_000_000n + BigInt(fraction);
}

export interface ParseAmountOptions {
  /** Name of the field, for the error message. */
  field?: string;
  /** Refuse `0.00000000` (a credit or a debit of nothing is a client mistake). */
  positive?: boolean;
}

/** Parse a client-supplied amount; anything but the exact wire shape is `invalid_request`. */
export function parseWireAmount(value: unknown, options: ParseAmountOptions = {}): Usd {
  const field = options.field ?? 'amount_usd';
  if (typeof value !== 'string' || !WIRE_AMOUNT_PATTERN.test(value)) {
    throw new FaucetError('invalid_request', `${field} must be a decimal string with exactly 8 fractional digits, e.g. "10.00000000"`);
  }
  const [integer = '0', fraction = '0'] = value.split('.');
  const amount = usdFromUnits(unitsFromDigits(integer, fraction));
  if (options.positive && isZeroUsd(amount)) {
    throw new FaucetError('invalid_request', `${field} must be greater than zero`);
  }
  return amount;
}

/** Parse a `numeric(20,8)` value read from PostgreSQL (may be negative). */
export function parseDatabaseAmount(value: string): Usd {
  const match = DATABASE_AMOUNT_PATTERN.exec(value);
  if (!match) throw new Error(`not a numeric(20,8) value: ${JSON.stringify(value)}`);
  const [, sign, integer = '0', fraction = '0'] = match;
  const magnitude = usdFromUnits(unitsFromDigits(integer, fraction));
  return sign === '-' ? negateUsd(magnitude) : magnitude;
}

const SETTING_AMOUNT_PATTERN = /^(\d{1,12})(?:\.(\d{1,8}))?$/;

/** An amount from a configuration setting (`"1"`, `"0.25"`, up to 8 decimals); anything else: `fallback`. */
export function parseUsdSetting(value: unknown, fallback: Usd): Usd {
  const match = typeof value === 'string' ? SETTING_AMOUNT_PATTERN.exec(value) : null;
  if (!match) return fallback;
  const [, integer = '0', fraction = ''] = match;
  return usdFromUnits(unitsFromDigits(integer, fraction.padEnd(8, '0')));
}

/** `"12.34000000"`; negative amounts get a leading `-` (ledger entries, never wallet balances). */
export function formatUsd(amount: Usd): string {
  const units = usdToUnits(amount);
  const negative = isNegativeUsd(amount);
  const magnitude = negative ? -units : units;
  const integer = magnitude / 100_000_000n;
  const fraction = (magnitude % 100_000_000n).toString().padStart(8, '0');
  return `${negative ? '-' : ''}${integer}.${fraction}`;
}

/** Zod schema of a wire amount (for request bodies); transforms to `Usd`. */
export const wireAmountSchema = z
  .string()
  .regex(WIRE_AMOUNT_PATTERN, 'must be a decimal string with exactly 8 fractional digits, e.g. "10.00000000"');

/** Zod schema of an amount in a response body (documentation only: the handler formats it). */
export const usdStringSchema = z.string().regex(/^-?\d+\.\d{8}$/);
