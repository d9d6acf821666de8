/**
 * One embeddings call to a provider, through the one outbound fetch: the upstream request of its
 * protocol (embedding-models.ts), and its answer translated into OpenAI's (embeddings-response.ts).
 * OpenAI, Azure, Mistral, Together and Fireworks speak OpenAI's `POST {root}/embeddings` (Azure at its
 * deployment's URL, as its chat); Google its native `models/{model}:batchEmbedContents`; the mock
 * answers locally. All inputs of a request go in one upstream call.
 */
import { z } from 'zod';
import { azureApiVersion, type OpenAiDialect, providerCatalog } from '#shared/providers/provider-catalog.ts';
import { type FetchFunction, outboundFetch } from '#shared/upstream/outbound-fetch.ts';
import { readBodyText } from '#shared/upstream/read-body.ts';
import { failureFromResponse } from '#shared/upstream/upstream-failure.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { ProviderCredential } from '../../providers/provider.ts';
import type { ModelReference } from '../../routing/parse-model.ts';
import { type EmbeddingProviderTraits, embeddingProviderTraits } from './embedding-models.ts';
import type { EmbeddingRequest } from './embeddings-request.ts';
import { type EmbeddingsAnswer, embeddingsAnswer } from './embeddings-response.ts';
import { mockEmbeddings } from './mock-embeddings.ts';

/** What a call needs from its surroundings (the chat adapters' ProviderContext, less the catalog). */
export interface EmbeddingContext {
  fetch: FetchFunction;
  upstreamTimeoutMs: number;
  /** Delay the mock waits before answering (MOCK_PROVIDER_LATENCY_MS). */
  mockLatencyMs: number;
}

export interface EmbeddingCall {
  /** From embeddingRequestFor: the model bare, refused already what the provider cannot do. */
  request: EmbeddingRequest;
  credential: ProviderCredential;
  /** Sent as `x-client-request-id` where the provider takes it (the upstream audit's correlation). */
  callId?: string;
  /** Aborted when the client goes away or the call reaches its deadline. */
  signal?: AbortSignal;
}

export async function createEmbeddings(
  context: EmbeddingContext,
  reference: ModelReference,
  call: EmbeddingCall,
): Promise<EmbeddingsAnswer> {
  const traits = embeddingProviderTraits(reference.provider);
  if (traits === undefined) throw new FaucetError('invalid_request', `model: provider "${reference.provider}" serves no embeddings.`);
  switch (traits.protocol) {
    case 'openai_embeddings':
      return openAiEmbeddings(context, reference.entry.dialect ?? providerCatalog.openai.dialect, traits, call);
    case 'gemini_batch_embed':
      return geminiEmbeddings(context, call);
    case 'mock':
      return mockEmbeddings(call.request, context.mockLatencyMs, call.signal);
  }
}

/**
 * Largest embeddings answer read: above a completion's limit (read-body.ts), as 2048 vectors of 1536
 * dimensions are 16 MiB in base64 and about four times that as JSON floats; within an isolate's memory.
 */
const maxEmbeddingsAnswerBytes = 32 * 1024 * 1024;

async function post(
  context: EmbeddingContext,
  call: EmbeddingCall,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  label: string,
) {
  const response = await outboundFetch(
    url,
    { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify(body) },
    {
      fetch: context.fetch,
      timeoutMs: context.upstreamTimeoutMs,
      allowLoopback: call.credential.allowLoopback ?? null,
      buffered: true,
      ...(call.signal ? { signal: call.signal } : {}),
    },
  );
  if (!response.ok) throw await failureFromResponse(response, label);
  const text = await readBodyText(response, maxEmbeddingsAnswerBytes);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new FaucetError('upstream_error', `${label} answered with something that is not JSON.`, { cause: error });
  }
}

const openAiLabel = 'The upstream provider';

const openAiAnswerSchema = z.looseObject({
  data: z.array(z.looseObject({ index: z.number().int().nonnegative(), embedding: z.union([z.array(z.number()), z.string()]) })),
  model: z.string().optional(),
  usage: z.looseObject({ prompt_tokens: z.number().int().nonnegative() }).nullish(),
});

async function openAiEmbeddings(
  context: EmbeddingContext,
  dialect: OpenAiDialect,
  traits: EmbeddingProviderTraits,
  call: EmbeddingCall,
): Promise<EmbeddingsAnswer> {
  const { request, credential } = call;
  const headers: Record<string, string> = {};
  if (credential.apiKey !== null) {
    if (dialect.auth === 'api_key') headers['api-key'] = credential.apiKey;
    else headers.authorization = `Bearer ${credential.apiKey}`;
  }
  if (call.callId !== undefined && dialect.sendsClientRequestId) headers['x-client-request-id'] = call.callId;
  const url = embeddingsUrl(credential.baseUrl, request.model, dialect);
  const json = await post(context, call, url, headers, openAiEmbeddingsBody(request, traits), openAiLabel);
  const parsed = openAiAnswerSchema.safeParse(json);
  if (!parsed.success) throw new FaucetError('upstream_error', `${openAiLabel} answered with an unexpected embeddings shape.`);
  const byIndex = [...parsed.data.data].sort((left, right) => left.index - right.index);
  if (byIndex.some((item, position) => item.index !== position)) {
    throw new FaucetError('upstream_error', `${openAiLabel} answered embeddings whose indexes do not follow the inputs.`);
  }
  const vectors = byIndex.map((item) => item.embedding);
  return embeddingsAnswer(request, vectors, parsed.data.model ?? request.model, parsed.data.usage?.prompt_tokens ?? null, openAiLabel);
}

/** The body an OpenAI-compatible provider is sent: the fields it takes, nothing else. */
function openAiEmbeddingsBody(request: EmbeddingRequest, traits: EmbeddingProviderTraits): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    input: request.input.kind === 'text' ? request.input.texts : request.input.tokens,
  };
  if (request.dimensions !== null && traits.dimensionsField !== null) body[traits.dimensionsField] = request.dimensions;
  // Base64 wherever the provider answers it (embeddings-response.ts decodes it for a client wanting floats).
  if (traits.nativeBase64) body.encoding_format = 'base64';
  if (traits.sendsUser && request.user !== null) body.user = request.user;
  return body;
}

/** Where a dialect's embeddings live: `<root>/embeddings`, or Azure's deployment URL with its api-version (as chatCompletionsUrl). */
function embeddingsUrl(baseUrl: string, model: string, dialect: OpenAiDialect): string {
  const [root = '', query = ''] = baseUrl.split('?', 2);
  const trimmed = root.replace(/\/+$/, '');
  if (dialect.url === 'chat_completions') return `${trimmed}/embeddings${query === '' ? '' : `?${query}`}`;
  const apiVersion = new URLSearchParams(query).get('api-version') ?? azureApiVersion;
  return `${trimmed}/deployments/${encodeURIComponent(model)}/embeddings?api-version=${encodeURIComponent(apiVersion)}`;
}

const geminiLabel = 'Google';

/** Model ids as Google names them: nothing that could change the path (as the chat adapter's). */
const geminiModelId = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const geminiAnswerSchema = z.looseObject({
  embeddings: z.array(z.looseObject({ values: z.array(z.number()) })),
  /** Newer models report the batch's input tokens; older ones report nothing. */
  usageMetadata: z.looseObject({ promptTokenCount: z.number().int().nonnegative().optional() }).nullish(),
});

async function geminiEmbeddings(context: EmbeddingContext, call: EmbeddingCall): Promise<EmbeddingsAnswer> {
  const { request, credential } = call;
  if (!geminiModelId.test(request.model)) throw new FaucetError('invalid_request', `model: "${request.model}" is not a Google model id.`);
  const headers: Record<string, string> = {};
  if (credential.apiKey !== null) headers['x-goog-api-key'] = credential.apiKey;
  const url = `${credential.baseUrl.replace(/\/+$/, '')}/models/${request.model}:batchEmbedContents`;
  const json = await post(context, call, url, headers, geminiEmbeddingsBody(request), geminiLabel);
  const parsed = geminiAnswerSchema.safeParse(json);
  if (!parsed.success) throw new FaucetError('upstream_error', `${geminiLabel} answered with an unexpected embeddings shape.`);
  const vectors = parsed.data.embeddings.map((embedding) => embedding.values);
  const reported = parsed.data.usageMetadata?.promptTokenCount ?? null;
  return embeddingsAnswer(request, vectors, request.model, reported, geminiLabel);
}

/** `batchEmbedContents`: one request per input, in order, each naming the model. */
function geminiEmbeddingsBody(request: EmbeddingRequest): { requests: Array<Record<string, unknown>> } {
  // embeddingRequestFor refuses token input for Google (it takes text only).
  if (request.input.kind !== 'text') throw new FaucetError('invalid_request', 'input: Google models take text, not token arrays.');
  return {
    requests: request.input.texts.map((text) => ({
      model: `models/${request.model}`,
      content: { parts: [{ text }] },
      ...(request.dimensions === null ? {} : { outputDimensionality: request.dimensions }),
    })),
  };
}
