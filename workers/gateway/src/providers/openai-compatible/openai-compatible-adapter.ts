/**
 * Upstreams that speak OpenAI's chat protocol (OpenAI itself and the many that copy it): the
 * request goes out as the client sent it (model bare, Faucet's own fields already removed), built
 * only from the fields the protocol's allow-list names.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import { chatCompletionSchema, type ChatRequest } from '../../openai/chat-schemas.ts';
import { outboundFetch } from '#shared/upstream/outbound-fetch.ts';
import { readBodyJson } from '#shared/upstream/read-body.ts';
import { failureFromResponse } from '#shared/upstream/upstream-failure.ts';
import { pickAcceptedFields } from '../accepted-fields.ts';
import type { ProviderAdapter, ProviderCall, ProviderContext } from '../provider.ts';
import { chunksFromOpenAiSse } from './chunks-from-openai-sse.ts';

const label = 'The upstream provider';

export function createOpenAiCompatibleAdapter(context: ProviderContext): ProviderAdapter {
  async function post(call: ProviderCall, body: ChatRequest): Promise<Response> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: body.stream ? 'text/event-stream' : 'application/json',
    };
    if (call.credential.apiKey !== null) headers.authorization = `Bearer ${call.credential.apiKey}`;
    if (call.callId !== undefined) headers['x-client-request-id'] = call.callId;
    const response = await outboundFetch(
      `${call.credential.baseUrl.replace(/\/+$/, '')}/chat/completions`,
      { method: 'POST', headers, body: JSON.stringify(body) },
      {
        fetch: context.fetch,
        timeoutMs: context.upstreamTimeoutMs,
        allowLoopback: call.credential.allowLoopback ?? null,
        ...(call.signal ? { signal: call.signal } : {}),
      },
    );
    if (!response.ok) throw await failureFromResponse(response, label);
    return response;
  }

  return {
    async complete(call) {
      const { stream_options: _ignored, ...request } = pickAcceptedFields('openai_compatible', call.request);
      const response = await post(call, { ...request, stream: false });
      const parsed = chatCompletionSchema.safeParse(await readBodyJson(response));
      if (!parsed.success) throw new FaucetError('upstream_error', `${label} answered with an unexpected completion shape.`);
      return parsed.data;
    },

    async stream(call) {
      // Usage is always requested: metering needs it whether or not the client asked for it.
      const request: ChatRequest = {
        ...pickAcceptedFields('openai_compatible', call.request),
        stream: true,
        stream_options: { ...call.request.stream_options, include_usage: true },
      };
      const response = await post(call, request);
      if (response.body === null) throw new FaucetError('upstream_error', `${label} sent no stream.`);
      return chunksFromOpenAiSse(response.body, label);
    },
  };
}
