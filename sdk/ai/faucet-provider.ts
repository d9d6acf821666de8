/**
 * `@faucet/sdk/ai`: a provider for the Vercel AI SDK. It wraps `@ai-sdk/openai-compatible` (the
 * gateway speaks OpenAI chat completions) with a fetch that obtains, caches and renews the end
 * user's session exactly like `createFaucet` does (same options, same SessionManager), sends it as
 * the bearer token, and retries once with a fresh session when the gateway answers 401. The
 * gateway's `faucet` object (request id, route, model, tokens, charge) comes back as the AI SDK's
 * `providerMetadata.faucet`, for `generateText` from the completion and for `streamText` from the
 * stream's last event. Cloud routes only: the `local` route goes through `createFaucet`.
 */
import { createOpenAICompatible, type MetadataExtractor, type OpenAICompatibleProvider } from '@ai-sdk/openai-compatible';
import type { FaucetMetadata, FaucetOptions } from '@faucet/sdk';
import { sessionSource } from '../src/create-faucet.ts';
import { FaucetError } from '../src/errors.ts';
import { defaultRetryOptions } from '../src/http/retry-policy.ts';
import { SessionManager } from '../src/session.ts';

export interface FaucetProviderSettings extends FaucetOptions {
  /** The app's feature sent with every call that names none in `providerOptions.faucet.feature`. */
  feature?: string;
}

export type FaucetAiProvider = OpenAICompatibleProvider;

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

function isFaucetMetadata(value: unknown): value is FaucetMetadata {
  const metadata = value as Partial<FaucetMetadata> | undefined;
  return typeof metadata?.request_id === 'string' && typeof metadata.route_mode === 'string';
}

type ProviderMetadata = NonNullable<Awaited<ReturnType<MetadataExtractor['extractMetadata']>>>;

/** `{ faucet }` as provider metadata: the object was parsed from the gateway's JSON, so it is a JSON object. */
function asProviderMetadata(faucet: FaucetMetadata): ProviderMetadata {
  return { faucet } as unknown as ProviderMetadata;
}

/** The gateway's `faucet` object as `providerMetadata.faucet`, from a completion or the stream's last event. */
const faucetMetadataExtractor: MetadataExtractor = {
  extractMetadata: async ({ parsedBody }) => {
    const faucet = (parsedBody as { faucet?: unknown } | undefined)?.faucet;
    return isFaucetMetadata(faucet) ? asProviderMetadata(faucet) : undefined;
  },
  createStreamExtractor: () => {
    let faucet: FaucetMetadata | undefined;
    return {
      processChunk: (chunk) => {
        const candidate = (chunk as { faucet?: unknown } | undefined)?.faucet;
        if (isFaucetMetadata(candidate)) faucet = candidate;
      },
      buildMetadata: () => (faucet ? asProviderMetadata(faucet) : undefined),
    };
  },
};

/**
 * The `faucet` object of an AI SDK result (`result.providerMetadata`, or `await result.providerMetadata`
 * of a stream), typed; undefined when the call did not go through Faucet.
 */
export function faucetMetadata(providerMetadata: unknown): FaucetMetadata | undefined {
  const faucet = (providerMetadata as { faucet?: unknown } | undefined)?.faucet;
  return isFaucetMetadata(faucet) ? faucet : undefined;
}

/**
 * `const faucet = createFaucetProvider({ publicAppId, baseUrl, session })`, then
 * `generateText({ model: faucet('openai:gpt-4o-mini'), prompt, providerOptions: { faucet: { feature: 'chat' } } })`.
 */
export function createFaucetProvider(settings: FaucetProviderSettings): FaucetAiProvider {
  if (typeof settings?.publicAppId !== 'string' || settings.publicAppId === '') {
    throw new FaucetError('invalid_request', 'publicAppId is required');
  }
  if (typeof settings.baseUrl !== 'string' || settings.baseUrl === '') throw new FaucetError('invalid_request', 'baseUrl is required');
  const { publicAppId } = settings;
  const baseUrl = trimSlash(settings.baseUrl);
  const gatewayBaseUrl = trimSlash(settings.gatewayBaseUrl ?? baseUrl);
  const fetchImpl = settings.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const sessions = new SessionManager({
    transport: {
      fetch: fetchImpl,
      timeoutMs: settings.timeoutMs ?? 60_000,
      streamIdleTimeoutMs: settings.streamIdleTimeoutMs ?? 30_000,
      retry: { ...defaultRetryOptions, ...settings.retry },
      onRetry: settings.onRetry,
    },
    baseUrl,
    publicAppId,
    source: sessionSource(settings, publicAppId),
    now: settings.now ?? Date.now,
  });

  /** One gateway request with the current session; a 401 drops it and the request goes once more with a new one. */
  const sessionFetch = async (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    const send = async () => {
      const token = await sessions.token(init.signal ?? undefined);
      const headers = new Headers(init.headers);
      headers.set('authorization', `Bearer ${token}`);
      return { token, response: await fetchImpl(input, { ...init, headers }) };
    };
    const first = await send();
    if (first.response.status !== 401) return first.response;
    await first.response.body?.cancel();
    sessions.invalidate(first.token);
    return (await send()).response;
  };

  const defaultFeature = settings.feature;
  const baseURL = `${gatewayBaseUrl}/v1`;
  const provider = createOpenAICompatible({
    name: 'faucet',
    baseURL,
    fetch: sessionFetch,
    includeUsage: true,
    metadataExtractor: faucetMetadataExtractor,
    transformRequestBody: (body) =>
      defaultFeature !== undefined && body.feature === undefined ? { ...body, feature: defaultFeature } : body,
  });

  /**
   * Embeddings (`POST /v1/embeddings`): the package's embedding model sends OpenAI's fields only, so
   * the call's feature (`providerOptions.faucet.feature`, else the default) is added to the body by
   * the fetch of a model made for the call, and the gateway's `faucet` object is handed back as
   * `providerMetadata.faucet`, as for chat.
   */
  const embeddingModel = (modelId: string): FaucetEmbeddingModel => {
    const modelFor = (feature: string | undefined) =>
      createOpenAICompatible({ name: 'faucet', baseURL, fetch: withFeature(sessionFetch, feature) }).embeddingModel(modelId);
    const model = modelFor(defaultFeature);
    return {
      specificationVersion: model.specificationVersion,
      provider: model.provider,
      modelId: model.modelId,
      maxEmbeddingsPerCall: model.maxEmbeddingsPerCall,
      supportsParallelCalls: model.supportsParallelCalls,
      async doEmbed(options) {
        const result = await modelFor(featureOf(options.providerOptions) ?? defaultFeature).doEmbed(options);
        const faucet = faucetMetadata(result.response?.body);
        return faucet === undefined
          ? result
          : { ...result, providerMetadata: { ...result.providerMetadata, ...asProviderMetadata(faucet) } };
      },
    };
  };
  provider.embeddingModel = embeddingModel;
  provider.textEmbeddingModel = embeddingModel;
  return provider;
}

type FaucetEmbeddingModel = ReturnType<OpenAICompatibleProvider['embeddingModel']>;
type Fetch = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

/** The feature a call names in `providerOptions.faucet.feature`. */
function featureOf(providerOptions: unknown): string | undefined {
  const feature = (providerOptions as { faucet?: { feature?: unknown } } | undefined)?.faucet?.feature;
  return typeof feature === 'string' ? feature : undefined;
}

/** A fetch that adds `feature` to a JSON body that names none. */
function withFeature(fetchImpl: Fetch, feature: string | undefined): Fetch {
  if (feature === undefined) return fetchImpl;
  return (input, init = {}) => {
    if (typeof init.body !== 'string') return fetchImpl(input, init);
    const body = JSON.parse(init.body) as Record<string, unknown>;
    return fetchImpl(input, { ...init, body: JSON.stringify(body.feature === undefined ? { ...body, feature } : body) });
  };
}
