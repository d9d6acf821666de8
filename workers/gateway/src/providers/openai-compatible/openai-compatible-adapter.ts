/**
 * Upstreams that speak OpenAI's chat protocol (OpenAI itself and the many that copy it): the
 * request goes out as the client sent it (model bare, Faucet's own fields already removed), built
 * only from the fields the provider's allow-list names. Where a provider departs from OpenAI, its
 * catalog dialect says how (URL, auth header, field names, streamed usage, usage fields).
 */
import { azureApiVersion, providerCatalog, type OpenAiDialect } from '#shared/providers/provider-catalog.ts';
import { outboundFetch } from '#shared/upstream/outbound-fetch.ts';
import { readBodyJson } from '#shared/upstream/read-body.ts';
import { failureFromResponse } from '#shared/upstream/upstream-failure.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { chatCompletionSchema, type ChatRequest } from '../../openai/chat-schemas.ts';
import { pickAcceptedFields } from '../accepted-fields.ts';
import type { ProviderAdapter, ProviderCall, ProviderContext } from '../provider.ts';
import { chunksFromOpenAiSse } from './chunks-from-openai-sse.ts';
import { normalizeChunk, normalizeUsage } from './normalize-usage.ts';
import { chunksFromResponsesSse, completionOfResponse, nativeResponsesBody, responsesUrl } from './responses-native.ts';

const label = 'The upstream provider';

/** Without a dialect (tests, the mock's stand-ins): OpenAI's own. */
export function createOpenAiCompatibleAdapter(
  context: ProviderContext,
  dialect: OpenAiDialect = providerCatalog.openai.dialect,
): ProviderAdapter {
  async function post(
    call: ProviderCall,
    body: Record<string, unknown>,
    url = chatCompletionsUrl(call.credential.baseUrl, call.request.model, dialect),
  ): Promise<Response> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: body.stream === true ? 'text/event-stream' : 'application/json',
    };
    if (call.credential.apiKey !== null) {
      if (dialect.auth === 'api_key') headers['api-key'] = call.credential.apiKey;
      else headers.authorization = `Bearer ${call.credential.apiKey}`;
    }
    if (call.callId !== undefined && dialect.sendsClientRequestId) headers['x-client-request-id'] = call.callId;
    const response = await outboundFetch(
      url,
      { method: 'POST', headers, body: JSON.stringify(body) },
      {
        fetch: context.fetch,
        timeoutMs: context.upstreamTimeoutMs,
        allowLoopback: call.credential.allowLoopback ?? null,
        // A completion is read whole anyway (readBodyJson); a stream is forwarded as it comes.
        buffered: body.stream !== true,
        ...(call.signal ? { signal: call.signal } : {}),
      },
    );
    if (!response.ok) throw await failureFromResponse(response, label);
    return response;
  }

  /** The Responses surface's call, where the upstream serves that API: sent as the client wrote it (responses-native.ts). */
  const nativeResponses = (call: ProviderCall, stream: boolean) =>
    call.responses !== undefined && dialect.responsesApi
      ? post(call, nativeResponsesBody(call.responses, call.request, stream), responsesUrl(call.credential.baseUrl, dialect))
      : null;

  return {
    async complete(call) {
      const native = nativeResponses(call, false);
      if (native !== null) return completionOfResponse(await readBodyJson(await native), label);
      const { stream_options: _ignored, ...request } = upstreamRequest(call.request, dialect);
      const response = await post(call, { ...request, stream: false });
      const parsed = chatCompletionSchema.safeParse(await readBodyJson(response));
      if (!parsed.success) throw new FaucetError('upstream_error', `${label} answered with an unexpected completion shape.`);
      return { ...parsed.data, usage: normalizeUsage(parsed.data.usage, dialect) };
    },
    async stream(call) {
      const native = nativeResponses(call, true);
      if (native !== null) {
        const response = await native;
        if (response.body === null) throw new FaucetError('upstream_error', `${label} sent no stream.`);
        return chunksFromResponsesSse(response.body, label);
      }
      const { stream_options: requested, ...request } = upstreamRequest(call.request, dialect);
      // Usage is always needed for metering: asked for where the upstream sends it only when asked.
      const body =
        dialect.streamUsage === 'include_usage'
          ? { ...request, stream: true, stream_options: { ...(requested as object | undefined), include_usage: true } }
          : { ...request, stream: true };
      const response = await post(call, body);
      if (response.body === null) throw new FaucetError('upstream_error', `${label} sent no stream.`);
      return normalizedChunks(chunksFromOpenAiSse(response.body, label), dialect);
    },
  };
}

async function* normalizedChunks(chunks: AsyncIterable<Parameters<typeof normalizeChunk>[0]>, dialect: OpenAiDialect) {
  for await (const chunk of chunks) yield normalizeChunk(chunk, dialect);
}

/** The body an upstream of this dialect takes: the allow-list, then the dialect's own names. */
function upstreamRequest(request: ChatRequest, dialect: OpenAiDialect): Record<string, unknown> {
  const {
    max_completion_tokens: maxCompletion,
    max_tokens: maxTokens,
    seed,
    ...picked
  } = pickAcceptedFields('openai_compatible', request, dialect);
  const body: Record<string, unknown> = { ...picked };
  if (dialect.fields === 'openai') {
    if (maxCompletion != null) body.max_completion_tokens = maxCompletion;
    if (maxTokens != null) body.max_tokens = maxTokens;
  } else {
    // Outside OpenAI the output limit is `max_tokens`; with both given, the tighter one.
    const limits = [maxCompletion, maxTokens].filter((value): value is number => typeof value === 'number');
    if (limits.length > 0) body.max_tokens = Math.min(...limits);
  }
  if (seed != null) body[dialect.fields === 'mistral' ? 'random_seed' : 'seed'] = seed;
  return body;
}

/**
 * Where the chat completions of this dialect live. Azure: the credential's root is the resource's
 * `https://<resource>.openai.azure.com/openai`, the model is the deployment name, and the root may
 * carry `?api-version=…` to pin another API version than the catalog's.
 */
export function chatCompletionsUrl(baseUrl: string, model: string, dialect: OpenAiDialect): string {
  const [root = '', query = ''] = baseUrl.split('?', 2);
  const trimmed = root.replace(/\/+$/, '');
  if (dialect.url === 'chat_completions') return `${trimmed}/chat/completions${query === '' ? '' : `?${query}`}`;
  const apiVersion = new URLSearchParams(query).get('api-version') ?? azureApiVersion;
  return `${trimmed}/deployments/${encodeURIComponent(model)}/chat/completions?api-version=${encodeURIComponent(apiVersion)}`;
}
