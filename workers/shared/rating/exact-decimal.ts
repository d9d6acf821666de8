/**
 * Catalog numbers to money, exactly. The price catalog ships its prices as JavaScript numbers
 * (binary floats). A number is converted through its shortest round-trip decimal representation
 * (`String(0.15)` is `"0.15"`, `String(3625e-6)` is `"0.003625"`), digit by digit, never through
 * float arithmetic. A price that needs more than 8 fractional digits (e.g. `0.08333333333333334`)
 * has no exact money value and is refused (null): the caller leaves that model out of the catalog.
 */
import { parseWireAmount, type Usd } from '../money/index.ts';

/** The shortest decimal string of a finite non-negative number, without exponent; null otherwise. */
export function decimalString(value: number): string | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(value));
  if (!match) return null;
  const [, integer = '0', fraction = '', exponent = '0'] = match;
  const digits = integer + fraction;
  const point = integer.length + Number(exponent);
  let whole: string;
  let decimals: string;
  if (point <= 0) {
    whole = '0';
    decimals = '0'.repeat(-point) + digits;
  } else if (point >= digits.length) {
    whole = digits + '0'.repeat(point - digits.length);
    decimals = '';
  } else {
    whole = digits.slice(0, point);
    decimals = digits.slice(point);
  }
  whole = whole.replace(/^0+(?=\d)/, '');
  decimals = decimals.replace(/0+$/, '');
  return decimals === '' ? whole : `${whole}.${decimals}`;
}

/** A catalog price per million tokens as money, or null when it has no exact 8-decimal value. */
export function usdFromCatalogNumber(value: number): Usd | null {
  const text = decimalString(value);
  if (text === null) return null;
  const [whole = '0', decimals = ''] = text.split('.');
  if (decimals.length > 8 || whole.length > 12) return null;
  return parseWireAmount(`${whole}.${decimals.padEnd(8, '0')}`);
}
