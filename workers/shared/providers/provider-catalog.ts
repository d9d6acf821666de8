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

/** The Anthropic API version every request to Anthropic names (`anthropic-version`). */
export const anthropicApiVersion = '2023-06-01';

export type ProviderName = keyof typeof providerCatalog;

export function isProviderName(value: string): value is ProviderName {
  return Object.hasOwn(providerCatalog, value);
}

/**
 * Largest completion one call may produce: the hold's worst case when a request names no
 * `max_tokens`, and Anthropic's required `max_tokens` when the client gives none. Derived from the
 * price catalog's model data (workers/shared/rating/model-limits.ts).
 */
export { outputTokenCap } from '../rating/model-limits.ts';

/**
 * Most input tokens one image part can be billed at, per model, from the provider's published image
 * formula at its largest size and detail; the hold counts every image at this bound. A model not
 * listed has no known bound, so its image parts are refused.
 */
const imageTokenBounds: Record<string, number> = {
  // The mock counts an image as one high-detail 512 px tile of gpt-4o (count-prompt-tokens.ts).
  'mock:echo': 765,
  // OpenAI tiles: high detail fits the image in 2048×2048, then scales its short side to 768 px, so at
  // most 2×4 tiles of 512 px; gpt-4o-mini bills 2,833 base + 5,667 per tile.
  'openai:gpt-4o-mini': 2_833 + 8 * 5_667,
  // OpenAI patches: at most 1,536 patches of 32 px, × 1.62 for gpt-4.1-mini (above the gpt-4.1 tile
  // formula's 85 + 8 × 170 as well).
  'openai:gpt-4.1-mini': 2_489,
  // Anthropic: width × height / 750, images scaled down until the long edge is ≤ 1,568 px and the
  // image is ≤ ~1,600 tokens; 1,700 leaves room for the "~".
  'anthropic:claude-sonnet-4-5': 1_700,
  'anthropic:claude-haiku-4-5': 1_700,
};

export function imageTokenBound(provider: string, model: string): number | null {
  return imageTokenBounds[`${provider}:${model}`] ?? null;
}
