/**
 * Which providers take stored keys (every provider of the catalog but the in-process mock), what their
 * keys look like, and how a key is shown (masked). A format check catches pasted mistakes (wrong
 * provider, truncated, whitespace) without a network call; the optional live check (live-check.ts)
 * asks the provider itself. Providers whose key format is not published get the generic check only
 * (printable, no whitespace, 16–512 characters) rather than a guessed prefix that could refuse real keys.
 */
import { FaucetError } from '../wire/errors.ts';

export interface ProviderKeyFormat {
  /** Known key prefixes, longest first: the mask keeps the one the key starts with; empty: any. */
  prefixes: readonly string[];
  /** Characters after the prefix. */
  body: RegExp;
  /** Prefixes of other providers' keys that the prefixes above would also match. */
  foreignPrefixes: readonly string[];
}

const tokenBody = /^[A-Za-z0-9_-]{20,256}$/;
const generic: ProviderKeyFormat = { prefixes: [], body: /^[\x21-\x7e]{16,512}$/, foreignPrefixes: [] };

export const providerKeyFormats = {
  openai: { prefixes: ['sk-svcacct-', 'sk-admin-', 'sk-proj-', 'sk-'], body: tokenBody, foreignPrefixes: ['sk-ant-', 'sk-or-'] },
  anthropic: { prefixes: ['sk-ant-admin01-', 'sk-ant-api03-', 'sk-ant-'], body: tokenBody, foreignPrefixes: [] },
  google: { prefixes: ['AIza'], body: tokenBody, foreignPrefixes: [] },
  groq: { prefixes: ['gsk_'], body: tokenBody, foreignPrefixes: [] },
  xai: { prefixes: ['xai-'], body: tokenBody, foreignPrefixes: [] },
  openrouter: { prefixes: ['sk-or-v1-'], body: tokenBody, foreignPrefixes: [] },
  mistral: generic,
  deepseek: generic,
  together: generic,
  fireworks: generic,
  azure: generic,
  custom: generic,
} as const satisfies Record<string, ProviderKeyFormat>;

export type KeyProvider = keyof typeof providerKeyFormats;
export const keyProviders = Object.keys(providerKeyFormats) as [KeyProvider, ...KeyProvider[]];

/** Providers with no common API root: a key of theirs is stored with the endpoint it is used at. */
export const endpointProviders: ReadonlySet<KeyProvider> = new Set(['azure', 'custom']);

function matchedPrefix(provider: KeyProvider, apiKey: string): string | undefined {
  const { prefixes } = providerKeyFormats[provider] as ProviderKeyFormat;
  return prefixes.length === 0 ? '' : prefixes.find((prefix) => apiKey.startsWith(prefix));
}

/** Refuses a key that cannot be one of `provider`'s; the message never repeats the key. */
export function validateKeyFormat(provider: KeyProvider, apiKey: string): void {
  const prefix = matchedPrefix(provider, apiKey);
  const format: ProviderKeyFormat = providerKeyFormats[provider];
  const foreign = format.foreignPrefixes.some((other) => apiKey.startsWith(other));
  if (prefix === undefined || foreign || !format.body.test(apiKey.slice(prefix.length))) {
    throw new FaucetError(
      'invalid_request',
      format.prefixes.length === 0
        ? `api_key is not a ${provider} key: expected 16 to 512 printable characters without spaces`
        : `api_key is not a ${provider} key: expected "${format.prefixes.at(-1)}" followed by at least 20 letters, digits, "-" or "_"`,
    );
  }
}

/** `sk-proj-...WXYZ`: the key's known prefix (none for a generic format) and its last four characters. */
export function maskKey(provider: KeyProvider, apiKey: string): string {
  const prefix = matchedPrefix(provider, apiKey) ?? '';
  return `${prefix}...${apiKey.slice(-4)}`;
}
