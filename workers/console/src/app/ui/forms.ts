/**
 * Turning form text into the API's fields without judging it: the API validates and its envelope
 * message is what the user sees. Only layout is normalised (USD typed as `0.5` is sent as
 * `0.50000000`, lists split on commas and new lines); anything else goes as typed.
 */

/** `''` → null; a plain decimal with up to 8 places → 8 places; otherwise the text itself. */
export function usdField(text: string): string | null {
  const value = text.trim();
  if (!value) return null;
  const match = /^(\d+)(?:\.(\d{0,8}))?$/.exec(value);
  return match ? `${match[1]}.${(match[2] ?? '').padEnd(8, '0')}` : value;
}

/** `''` → null; an integer → its number; otherwise the text (the API names the field). */
export function intField(text: string): number | string | null {
  const value = text.trim();
  if (!value) return null;
  return /^-?\d+$/.test(value) ? Number(value) : value;
}

export function listField(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((item) => item.trim())
    .filter(Boolean);
}

/** Lines `alias = provider:model` into a record (a line without `=` maps to ''; the API refuses it). */
export function aliasesField(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .map((line) => {
        const at = line.indexOf('=');
        return at < 0 ? [line, ''] : [line.slice(0, at).trim(), line.slice(at + 1).trim()];
      }),
  );
}

export const aliasesText = (aliases: Record<string, string>) =>
  Object.entries(aliases)
    .map(([alias, model]) => `${alias} = ${model}`)
    .join('\n');
