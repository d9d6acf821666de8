/**
 * The providers a `provider:model` name may start with: the protocol each speaks, where the platform
 * pool reaches it, which secret holds the platform's pool key, and the few ways an OpenAI-compatible
 * upstream departs from OpenAI (its dialect). Adding a provider starts here (docs/models.md).
 */
export type ProviderProtocol = 'openai_compatible' | 'anthropic' | 'gemini' | 'mock';

/** Environment secrets holding the platform pool's key, one per provider. */
export type PoolKeySecret =
  | 'OPENAI_API_KEY'
  | 'ANTHROPIC_API_KEY'
  | 'GEMINI_API_KEY'
  | 'MISTRAL_API_KEY'
  | 'GROQ_API_KEY'
  | 'DEEPSEEK_API_KEY'
  | 'XAI_API_KEY'
  | 'TOGETHER_API_KEY'
  | 'FIREWORKS_API_KEY'
  | 'OPENROUTER_API_KEY'
  | 'AZURE_OPENAI_API_KEY'
  | 'CUSTOM_OPENAI_API_KEY';

/** Settings naming the platform pool's API root where it is not (only) the catalog's. */
export type PoolBaseUrlSetting = 'OPENAI_BASE_URL' | 'ANTHROPIC_BASE_URL' | 'AZURE_OPENAI_BASE_URL' | 'CUSTOM_OPENAI_BASE_URL';

/**
 * How an OpenAI-compatible upstream differs from OpenAI. Each difference is named, so the adapter
 * has no provider names in it.
 */
export interface OpenAiDialect {
  /** `chat_completions`: `<root>/chat/completions`; `azure_deployment`: `<root>/deployments/<model>/chat/completions?api-version=…`. */
  url: 'chat_completions' | 'azure_deployment';
  /** `bearer`: `Authorization: Bearer <key>`; `api_key`: Azure's `api-key: <key>`. */
  auth: 'bearer' | 'api_key';
  /** Which request fields it takes (providers/accepted-fields.ts): OpenAI's all, or a named narrower list. */
  fields: 'openai' | 'mistral' | 'groq' | 'deepseek' | 'basic';
  /**
   * `include_usage`: streams report usage only when asked (`stream_options.include_usage`);
   * `always`: it always sends usage on the last chunk and refuses `stream_options` (Mistral).
   */
  streamUsage: 'include_usage' | 'always';
  /** False where `completion_tokens` leaves the reasoning tokens out (xAI): the adapter adds them back. */
  reasoningInCompletion: boolean;
  /** OpenAI's own `x-client-request-id` header (the upstream audit's correlation); other upstreams get none. */
  sendsClientRequestId: boolean;
  /**
   * It serves OpenAI's Responses API (`<root>/responses`; Azure's v1 API at `<root>/v1/responses`): the
   * Responses surface is sent there as the client wrote it, not translated through chat (OpenAI, Azure).
   */
  responsesApi: boolean;
}

export interface ProviderEntry {
  protocol: ProviderProtocol;
  /**
   * Default API root; empty where every account has its own (Azure's resource, a custom endpoint): the
   * pool's root then comes from `poolBaseUrlSetting`, and an empty root is refused by the outbound
   * fetch's address check. Every root is address-checked.
   */
  baseUrl: string;
  /** Environment secret with the platform pool key; null when the provider needs no key. */
  poolKeySecret: PoolKeySecret | null;
  /** Setting that names (or overrides) the platform pool's API root. */
  poolBaseUrlSetting?: PoolBaseUrlSetting;
  /**
   * Appended to the setting's value where the setting names the host's root as the provider's own
   * SDK takes it (`ANTHROPIC_BASE_URL=https://api.anthropic.com`, as for Claude Code), not the API root.
   */
  poolBaseUrlPath?: string;
  /** For `openai_compatible` only. */
  dialect?: OpenAiDialect;
}

const openAiDialect: OpenAiDialect = {
  url: 'chat_completions',
  auth: 'bearer',
  fields: 'openai',
  streamUsage: 'include_usage',
  reasoningInCompletion: true,
  sendsClientRequestId: false,
  responsesApi: false,
};

export const providerCatalog = {
  openai: {
    protocol: 'openai_compatible',
    baseUrl: 'https://api.openai.com/v1',
    poolKeySecret: 'OPENAI_API_KEY',
    poolBaseUrlSetting: 'OPENAI_BASE_URL',
    dialect: { ...openAiDialect, sendsClientRequestId: true, responsesApi: true },
  },
  anthropic: {
    protocol: 'anthropic',
    baseUrl: 'https://api.anthropic.com/v1',
    poolKeySecret: 'ANTHROPIC_API_KEY',
    poolBaseUrlSetting: 'ANTHROPIC_BASE_URL',
    poolBaseUrlPath: '/v1',
  },
  google: { protocol: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com/v1beta', poolKeySecret: 'GEMINI_API_KEY' },
  mistral: {
    protocol: 'openai_compatible',
    baseUrl: 'https://api.mistral.ai/v1',
    poolKeySecret: 'MISTRAL_API_KEY',
    dialect: { ...openAiDialect, fields: 'mistral', streamUsage: 'always' },
  },
  groq: {
    protocol: 'openai_compatible',
    baseUrl: 'https://api.groq.com/openai/v1',
    poolKeySecret: 'GROQ_API_KEY',
    dialect: { ...openAiDialect, fields: 'groq' },
  },
  deepseek: {
    protocol: 'openai_compatible',
    baseUrl: 'https://api.deepseek.com',
    poolKeySecret: 'DEEPSEEK_API_KEY',
    dialect: { ...openAiDialect, fields: 'deepseek' },
  },
  xai: {
    protocol: 'openai_compatible',
    baseUrl: 'https://api.x.ai/v1',
    poolKeySecret: 'XAI_API_KEY',
    dialect: { ...openAiDialect, reasoningInCompletion: false },
  },
  together: {
    protocol: 'openai_compatible',
    baseUrl: 'https://api.together.xyz/v1',
    poolKeySecret: 'TOGETHER_API_KEY',
    dialect: { ...openAiDialect, fields: 'basic' },
  },
  fireworks: {
    protocol: 'openai_compatible',
    baseUrl: 'https://api.fireworks.ai/inference/v1',
    poolKeySecret: 'FIREWORKS_API_KEY',
    dialect: { ...openAiDialect, fields: 'basic' },
  },
  openrouter: {
    protocol: 'openai_compatible',
    baseUrl: 'https://openrouter.ai/api/v1',
    poolKeySecret: 'OPENROUTER_API_KEY',
    dialect: openAiDialect,
  },
  // `azure:<deployment>`; the root is the resource's `https://<resource>.openai.azure.com/openai`.
  azure: {
    protocol: 'openai_compatible',
    baseUrl: '',
    poolKeySecret: 'AZURE_OPENAI_API_KEY',
    poolBaseUrlSetting: 'AZURE_OPENAI_BASE_URL',
    dialect: { ...openAiDialect, url: 'azure_deployment', auth: 'api_key', responsesApi: true },
  },
  // Any OpenAI-compatible server with a public address; only the fields every such server takes.
  custom: {
    protocol: 'openai_compatible',
    baseUrl: '',
    poolKeySecret: 'CUSTOM_OPENAI_API_KEY',
    poolBaseUrlSetting: 'CUSTOM_OPENAI_BASE_URL',
    dialect: { ...openAiDialect, fields: 'basic' },
  },
  mock: { protocol: 'mock', baseUrl: 'mock://local', poolKeySecret: null },
} as const satisfies Record<string, ProviderEntry>;

/** The Anthropic API version every request to Anthropic names (`anthropic-version`). */
export const anthropicApiVersion = '2023-06-01';

/** Azure OpenAI's `api-version` when the credential's root names none (the latest GA data-plane version). */
export const azureApiVersion = '2024-10-21';

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
  'mock:tools': 765,
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
