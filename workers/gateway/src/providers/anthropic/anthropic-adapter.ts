/** Anthropic's Messages API behind the OpenAI-shaped adapter interface. */
import { FaucetError } from '#shared/wire/errors.ts';
import { outboundFetch } from '#shared/upstream/outbound-fetch.ts';
import { readBodyJson } from '#shared/upstream/read-body.ts';
import { failureFromResponse } from '#shared/upstream/upstream-failure.ts';
import { anthropicApiVersion, outputTokenCap } from '#shared/providers/provider-catalog.ts';
import type { ProviderAdapter, ProviderCall, ProviderContext } from '../provider.ts';
import { chunksFromAnthropicSse } from './chunks-from-anthropic-sse.ts';
import { fromAnthropicResponse } from './from-anthropic-response.ts';
import { toAnthropicRequest } from './to-anthropic-request.ts';

const label = 'Anthropic';

export function createAnthropicAdapter(context: ProviderContext): ProviderAdapter {
  async function post(call: ProviderCall, stream: boolean): Promise<Response> {
    const body = toAnthropicRequest({ ...call.request, stream }, outputTokenCap('anthropic', call.request.model, context.priceCatalog));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      'anthropic-version': anthropicApiVersion,
    };
    if (call.credential.apiKey !== null) headers['x-api-key'] = call.credential.apiKey;
    // Anthropic ignores it; a fake upstream (the tests' upstream audit) matches its calls by it, as OpenAI's.
    if (call.callId !== undefined) headers['x-client-request-id'] = call.callId;
    const response = await outboundFetch(
      `${call.credential.baseUrl.replace(/\/+$/, '')}/messages`,
      { method: 'POST', headers, body: JSON.stringify(body) },
      {
        fetch: context.fetch,
        timeoutMs: context.upstreamTimeoutMs,
        buffered: !stream,
        // A local stack's fake upstream (ANTHROPIC_BASE_URL on the one allowed loopback port), as for every adapter.
        allowLoopback: call.credential.allowLoopback ?? null,
        ...(call.signal ? { signal: call.signal } : {}),
      },
    );
    if (!response.ok) throw await failureFromResponse(response, label);
    return response;
  }

  return {
    async complete(call) {
      const response = await post(call, false);
      return fromAnthropicResponse(await readBodyJson(response), nowSeconds());
    },
    async stream(call) {
      const response = await post(call, true);
      if (response.body === null) throw new FaucetError('upstream_error', `${label} sent no stream.`);
      return chunksFromAnthropicSse(response.body, nowSeconds());
    },
  };
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
