/**
 * Google's Gemini API (native `generateContent` / `streamGenerateContent`) behind the OpenAI-shaped
 * adapter interface. The native API rather than Google's OpenAI-compatible endpoint: only the native
 * one reports the usage classes the bill needs (cache hits, thinking, tool-use prompt, per-modality
 * counts) on every call, streamed or not.
 */
import { outboundFetch } from '#shared/upstream/outbound-fetch.ts';
import { readBodyJson } from '#shared/upstream/read-body.ts';
import { failureFromResponse } from '#shared/upstream/upstream-failure.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { pickAcceptedFields } from '../accepted-fields.ts';
import type { ProviderAdapter, ProviderCall, ProviderContext } from '../provider.ts';
import { chunksFromGeminiSse } from './chunks-from-gemini-sse.ts';
import { fromGeminiResponse } from './from-gemini-response.ts';
import { toGeminiRequest } from './to-gemini-request.ts';

const label = 'Google';

/** Model ids as Google names them (`gemini-2.5-flash`, `gemini-2.0-flash-001`): nothing that could change the path. */
const modelId = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function createGeminiAdapter(context: ProviderContext): ProviderAdapter {
  async function post(call: ProviderCall, stream: boolean): Promise<Response> {
    const model = call.request.model;
    if (!modelId.test(model)) throw new FaucetError('invalid_request', `"${model}" is not a Google model id.`);
    const body = toGeminiRequest(pickAcceptedFields('gemini', call.request));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
    };
    if (call.credential.apiKey !== null) headers['x-goog-api-key'] = call.credential.apiKey;
    const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
    const response = await outboundFetch(
      `${call.credential.baseUrl.replace(/\/+$/, '')}/models/${model}:${method}`,
      { method: 'POST', headers, body: JSON.stringify(body) },
      {
        fetch: context.fetch,
        timeoutMs: context.upstreamTimeoutMs,
        allowLoopback: call.credential.allowLoopback ?? null,
        buffered: !stream,
        ...(call.signal ? { signal: call.signal } : {}),
      },
    );
    if (!response.ok) throw await failureFromResponse(response, label);
    return response;
  }

  return {
    async complete(call) {
      const response = await post(call, false);
      return fromGeminiResponse(await readBodyJson(response), call.request.model, nowSeconds());
    },
    async stream(call) {
      const response = await post(call, true);
      if (response.body === null) throw new FaucetError('upstream_error', `${label} sent no stream.`);
      return chunksFromGeminiSse(response.body, call.request.model, nowSeconds());
    },
  };
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
