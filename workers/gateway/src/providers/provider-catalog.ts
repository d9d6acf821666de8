/**
 * The providers a `provider:model` name may start with, the protocol each speaks, where the
 * platform pool reaches it and which secret holds the platform's pool key.
 */
export type ProviderProtocol = 'openai_compatible' | 'anthropic' | 'mock';

export interface ProviderEntry {
  protocol: ProviderProtocol;
  /** Default API root; BYOK or developer credentials may name another (still SSRF-checked). */
  baseUrl: string;
  /** Environment secret with the platform pool key; null when the provider needs no key. */
  poolKeySecret: 'OPENAI_API_KEY' | 'ANTHROPIC_API_KEY' | null;
}

export const providerCatalog = {
  openai: { protocol: 'openai_compatible', baseUrl: 'https://api.openai.com/v1', poolKeySecret: 'OPENAI_API_KEY' },
  anthropic: { protocol: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', poolKeySecret: 'ANTHROPIC_API_KEY' },
  mock: { protocol: 'mock', baseUrl: 'mock://local', poolKeySecret: null },
} as const satisfies Record<string, ProviderEntry>;

export type ProviderName = keyof typeof providerCatalog;

export function isProviderName(value: string): value is ProviderName {
  return Object.hasOwn(providerCatalog, value);
}

/**
 * Largest completion each shipped model may produce: the hold's worst case when a request names no
 * `max_tokens`, and Anthropic's required `max_tokens` when the client gives none.
 */
const outputTokenCaps: Record<string, number> = {
  'mock:echo': 4_096,
  'openai:gpt-4o-mini': 16_384,
  'openai:gpt-4.1-mini': 32_768,
  'anthropic:claude-sonnet-4-5': 64_000,
  'anthropic:claude-haiku-4-5': 64_000,
};

export const fallbackOutputTokenCap = 4_096;

export function outputTokenCap(provider: string, model: string): number {
  return outputTokenCaps[`${provider}:${model}`] ?? fallbackOutputTokenCap;
}
