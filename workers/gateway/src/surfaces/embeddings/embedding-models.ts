/**
 * Which providers serve embeddings and what each one's endpoint takes: the input forms, how it asks
 * for fewer dimensions, whether it answers base64 itself, and how many inputs one upstream call
 * carries. A provider not listed here serves no embeddings through Faucet. Per model: whether it is
 * an embedding model (what `POST /v1/embeddings` serves and `GET /v1/models` lists for it), and whether
 * (and up to what) it can shorten its vectors, from the providers' model pages.
 */
import type { ProviderName } from '#shared/providers/provider-catalog.ts';

type EmbeddingProtocol = 'openai_embeddings' | 'gemini_batch_embed' | 'mock';

export interface EmbeddingProviderTraits {
  protocol: EmbeddingProtocol;
  /** Takes token-id arrays as input (OpenAI's tokenizers); the others take text only. */
  tokenInput: boolean;
  /** The request field that shortens the vectors, for the models that can. */
  dimensionsField: 'dimensions' | 'output_dimension' | 'outputDimensionality' | null;
  /**
   * Answers `encoding_format: "base64"`: it is always asked for base64 (a quarter of the bytes of
   * JSON floats), decoded where the client wants floats. The others answer floats, and Faucet encodes
   * them where the client wants base64.
   */
  nativeBase64: boolean;
  /** Sends OpenAI's `user` upstream (the others refuse or ignore fields they do not know). */
  sendsUser: boolean;
  /** Most inputs one upstream call takes: a batch is one call, never split (one call, one booking). */
  maxInputs: number;
}

/** OpenAI's own limit on the inputs of one request. */
export const openAiMaxInputs = 2048;

const openAiEmbeddings: EmbeddingProviderTraits = {
  protocol: 'openai_embeddings',
  tokenInput: true,
  dimensionsField: 'dimensions',
  nativeBase64: true,
  sendsUser: true,
  maxInputs: openAiMaxInputs,
};

/** OpenAI-compatible embeddings endpoints that take text only and no field beyond model and input. */
const textOnlyEmbeddings: EmbeddingProviderTraits = {
  ...openAiEmbeddings,
  tokenInput: false,
  nativeBase64: false,
  sendsUser: false,
};

const embeddingProviders: Partial<Record<ProviderName, EmbeddingProviderTraits>> = {
  openai: openAiEmbeddings,
  azure: openAiEmbeddings,
  mistral: { ...textOnlyEmbeddings, dimensionsField: 'output_dimension' },
  together: textOnlyEmbeddings,
  fireworks: textOnlyEmbeddings,
  // `batchEmbedContents` takes at most 100 requests.
  google: {
    protocol: 'gemini_batch_embed',
    tokenInput: false,
    dimensionsField: 'outputDimensionality',
    nativeBase64: false,
    sendsUser: false,
    maxInputs: 100,
  },
  mock: {
    protocol: 'mock',
    tokenInput: true,
    dimensionsField: 'dimensions',
    nativeBase64: false,
    sendsUser: false,
    maxInputs: openAiMaxInputs,
  },
};

export function embeddingProviderTraits(provider: ProviderName): EmbeddingProviderTraits | undefined {
  return embeddingProviders[provider];
}

/** Providers that serve embeddings, for error messages and listings. */
export function embeddingProviderNames(): ProviderName[] {
  return Object.keys(embeddingProviders) as ProviderName[];
}

/**
 * Models that can shorten their vectors, with the longest vector they make (what `dimensions` may
 * ask for at most), per provider. Azure's deployments are looked up by OpenAI's model names (the
 * price catalog prices them so too).
 */
const openAiShortenable: Readonly<Record<string, number>> = { 'text-embedding-3-small': 1536, 'text-embedding-3-large': 3072 };
const shortenableModels: Partial<Record<ProviderName, Readonly<Record<string, number>>>> = {
  openai: openAiShortenable,
  azure: openAiShortenable,
  google: { 'gemini-embedding-001': 3072, 'gemini-embedding-2': 3072, 'text-embedding-004': 768 },
  mistral: { 'codestral-embed': 3072 },
};

/** The mock's embedding models: `echo`, the one the price catalog's overlay prices (mock-embeddings.ts). */
const mockEmbeddingModels = ['echo'] as const;

/**
 * Embedding models are named so by every provider Faucet routes (text-embedding-3-small,
 * mistral-embed, gemini-embedding-001, nomic-embed-text, …; BAAI's bge family). A chat model sent
 * to the embeddings surface would answer a 502 after being called, so it is refused before anything
 * is held; and an embedding model serves no chat surface.
 */
export function isEmbeddingModelName(model: string): boolean {
  return /embed|(^|\/)bge-/i.test(model);
}

/** Why `POST /v1/embeddings` does not serve `provider:model`, or null when it does. */
export function embeddingModelRefusal(provider: ProviderName, model: string): string | null {
  const traits = embeddingProviders[provider];
  if (traits === undefined) {
    return `provider "${provider}" serves no embeddings through Faucet; embeddings come from ${embeddingProviderNames().join(', ')}.`;
  }
  if (traits.protocol === 'mock') {
    return (mockEmbeddingModels as readonly string[]).includes(model)
      ? null
      : `the mock provider has no embedding model "${model}"; use mock:${mockEmbeddingModels[0]}.`;
  }
  return isEmbeddingModelName(model) ? null : `"${provider}:${model}" is not an embedding model.`;
}

/** The mock's default and longest vectors. */
export const mockDefaultDimensions = 256;
const mockMaxDimensions = 4096;

/** The longest vector `dimensions` may ask of this model, or null when the model cannot shorten its vectors. */
export function maxDimensions(provider: ProviderName, model: string): number | null {
  const traits = embeddingProviders[provider];
  if (traits === undefined || traits.dimensionsField === null) return null;
  if (traits.protocol === 'mock') return mockMaxDimensions;
  return shortenableModels[provider]?.[model] ?? null;
}
