/**
 * Sums of the API's USD strings without floats: amounts are parsed into integer units of 1e-8
 * (the API's 8 decimals) as bigint, added, and formatted back. `toChartNumber` is for drawing only.
 */
const scale = 100_000_000n;

export function toUnits(amount: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d{1,8}))?$/.exec(amount.trim());
  if (!match) throw new Error(`not a USD amount: ${amount}`);
  const units = BigInt(match[2]!) * scale + BigInt((match[3] ?? '').padEnd(8, '0'));
  return match[1] ? -units : units;
}

export function fromUnits(units: bigint): string {
  const sign = units < 0n ? '-' : '';
  const absolute = units < 0n ? -units : units;
  return `${sign}${absolute / scale}.${(absolute % scale).toString().padStart(8, '0')}`;
}

/** A USD string as a JS number, for a chart's y value (never for a shown or summed amount). */
export const toChartNumber = (amount: string) => Number(amount);
