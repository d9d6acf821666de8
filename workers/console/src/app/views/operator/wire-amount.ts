/**
 * An amount an operator types (`12`, `12.5`, `12.34`, or the API's own `12.34000000`) as the API's
 * 8-decimal string, without floats; undefined when it is not a non-negative amount of at most 8 decimals.
 */
export function toWireAmount(text: string): string | undefined {
  const match = /^\s*(\d{1,12})(?:\.(\d{1,8}))?\s*$/.exec(text);
  if (!match) return undefined;
  return `${BigInt(match[1]!).toString()}.${(match[2] ?? '').padEnd(8, '0')}`;
}
