/**
 * Which providers take stored keys, what their keys look like, and how a key is shown (masked).
 * A format check catches pasted mistakes (wrong provider, truncated, whitespace) without a network
 * call; the optional live check (live-check.ts) asks the provider itself.
 */
import { FaucetError } from '../wire/errors.ts';

export interface ProviderKeyFormat {
  /** Known key prefixes, longest first: the mask keeps the one the key starts with. */
  prefixes: readonly string[];
  /** Characters after the prefix. */
  body: RegExp;
  /** Prefixes of other providers' keys that the prefixes above would also match. */
  foreignPrefixes: readonly string[];
}

export const providerKeyFormats = {
  openai: { prefixes: ['sk-svcacct-', 'sk-admin-', 'sk-proj-', 'sk-'], body: /^[A-Za-z0-9_-]{20,256}$/, foreignPrefixes: ['sk-ant-'] },
  anthropic: { prefixes: ['sk-ant-admin01-', 'sk-ant-api03-', 'sk-ant-'], body: /^[A-Za-z0-9_-]{20,256}$/, foreignPrefixes: [] },
} as const satisfies Record<string, ProviderKeyFormat>;

export type KeyProvider = keyof typeof providerKeyFormats;
export const keyProviders = Object.keys(providerKeyFormats) as [KeyProvider, ...KeyProvider[]];

function matchedPrefix(provider: KeyProvider, apiKey: string): string | undefined {
  return providerKeyFormats[provider].prefixes.find((prefix) => apiKey.startsWith(prefix));
}

/** Refuses a key that cannot be one of `provider`'s; the message never repeats the key. */
export function validateKeyFormat(provider: KeyProvider, apiKey: string): void {
  const prefix = matchedPrefix(provider, apiKey);
  const format = providerKeyFormats[provider];
  const foreign = format.foreignPrefixes.some((other) => apiKey.startsWith(other));
  if (prefix === undefined || foreign || !format.body.test(apiKey.slice(prefix.length))) {
    throw new FaucetError(
      'invalid_request',
      `api_key is not a ${provider} key: expected "${format.prefixes.at(-1)}" followed by at least 20 letters, digits, "-" or "_"`,
    );
  }
}

/** `sk-proj-...WXYZ`: the key's prefix and its last four characters (for a key that passed validation). */
export function maskKey(provider: KeyProvider, apiKey: string): string {
  const prefix = matchedPrefix(provider, apiKey) ?? '';
  return `${prefix}...${apiKey.slice(-4)}`;
}
