/** What each provider is sent: its dialect's URL, fields and names, and the address guard on every root. */
import { describe, expect, it } from 'vitest';
import { providerCatalog, type ProviderName } from '#shared/providers/provider-catalog.ts';
import { fakeUpstream, jsonResponse, openAiCompletion, sseResponse } from '../../../test/fake-upstream.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { refuseUnacceptedFields } from './accepted-fields.ts';
import { createAdapter } from './create-adapter.ts';
import googlePlain from './fixtures/google/plain.json';

function adapterFor(provider: ProviderName, answer = () => jsonResponse(openAiCompletion('ok'))) {
  const upstream = fakeUpstream(answer);
  const adapter = createAdapter(providerCatalog[provider], { fetch: upstream.fetch, upstreamTimeoutMs: 5_000, mockLatencyMs: 0 });
  return { adapter, upstream };
}

const hi = [{ role: 'user' as const, content: 'Hi' }];

describe('OpenAI-compatible dialects', () => {
  it('Mistral: seed as random_seed, max_completion_tokens as max_tokens, and no stream_options (it streams usage unasked)', async () => {
    const { adapter, upstream } = adapterFor('mistral', () => sseResponse(['data: [DONE]\n\n']));
    const request: ChatRequest = { model: 'mistral-small-latest', messages: hi, seed: 7, max_completion_tokens: 50, max_tokens: 80 };
    await adapter.stream({ credential: { apiKey: 'k', baseUrl: providerCatalog.mistral.baseUrl }, request });
    expect(upstream.requests[0]?.body).toEqual({
      model: 'mistral-small-latest',
      messages: hi,
      random_seed: 7,
      max_tokens: 50,
      stream: true,
    });
  });

  it('OpenAI keeps both output limits as sent and gets the call id; other upstreams do not', async () => {
    const openai = adapterFor('openai');
    const request: ChatRequest = { model: 'gpt-4o-mini', messages: hi, max_completion_tokens: 50, max_tokens: 80 };
    await openai.adapter.complete({ credential: { apiKey: 'k', baseUrl: providerCatalog.openai.baseUrl }, request, callId: 'call-1' });
    expect(openai.upstream.requests[0]?.body).toMatchObject({ max_completion_tokens: 50, max_tokens: 80 });
    expect(openai.upstream.requests[0]?.headers['x-client-request-id']).toBe('call-1');
    const groq = adapterFor('groq');
    await groq.adapter.complete({ credential: { apiKey: 'k', baseUrl: providerCatalog.groq.baseUrl }, request, callId: 'call-1' });
    expect(groq.upstream.requests[0]?.headers['x-client-request-id']).toBeUndefined();
  });

  it('Azure: the deployment in the path, the api-version from the root when it names one, the key in api-key', async () => {
    const { adapter, upstream } = adapterFor('azure');
    await adapter.complete({
      credential: { apiKey: 'azure-key', baseUrl: 'https://contoso.openai.azure.com/openai/?api-version=2025-01-01-preview' },
      request: { model: 'my deployment', messages: hi },
    });
    expect(upstream.requests[0]?.url).toBe(
      'https://contoso.openai.azure.com/openai/deployments/my%20deployment/chat/completions?api-version=2025-01-01-preview',
    );
    expect(upstream.requests[0]?.headers).toMatchObject({ 'api-key': 'azure-key' });
  });

  it.each([
    ['custom', 'http://10.0.0.7:8000/v1'],
    ['custom', 'http://169.254.169.254/latest'],
    ['custom', 'http://localhost:11434/v1'],
    ['azure', 'http://192.168.1.20/openai'],
    // A provider whose root each account names, used with none: refused, not sent anywhere.
    ['azure', ''],
  ] as const)('%s refuses the root %s before any request', async (provider, baseUrl) => {
    const { adapter, upstream } = adapterFor(provider);
    await expect(adapter.complete({ credential: { apiKey: 'k', baseUrl }, request: { model: 'm', messages: hi } })).rejects.toMatchObject({
      code: 'upstream_error',
    });
    expect(upstream.requests).toEqual([]);
  });

  it.each([
    ['groq', { logprobs: true }, 'logprobs'],
    ['groq', { messages: [{ role: 'user', content: 'Hi', name: 'ann' }] }, 'name'],
    ['mistral', { user: 'u' }, 'user'],
    ['mistral', { messages: [{ role: 'developer', content: 'Be brief' }, ...hi] }, 'role "developer"'],
    ['deepseek', { seed: 1 }, 'seed'],
    ['together', { store: false }, 'store'],
    ['custom', { service_tier: 'auto' }, 'service_tier'],
    ['google', { logit_bias: { '1': 1 } }, 'logit_bias'],
    ['google', { user: 'u' }, 'user'],
  ] as const)('%s refuses %j with 400 before any hold', (provider, fields, named) => {
    const request = { model: 'm', messages: hi, ...fields } as ChatRequest;
    expect(() => refuseUnacceptedFields(providerCatalog[provider].protocol, provider, request)).toThrow(named);
  });
});

describe('Gemini requests', () => {
  it('translates system, turns, tools, a tool answer (named after its call), images, limits and JSON output', async () => {
    const { adapter, upstream } = adapterFor('google', () => jsonResponse(googlePlain));
    await adapter.complete({
      credential: { apiKey: 'AIza-test', baseUrl: providerCatalog.google.baseUrl },
      request: {
        model: 'gemini-2.5-flash',
        max_tokens: 300,
        max_completion_tokens: 200,
        temperature: 0.3,
        stop: 'END',
        seed: 5,
        response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' } } },
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: '{"sky":"clear"}' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'And this?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } },
            ],
          },
        ],
      },
    });
    const [sent] = upstream.requests;
    expect(sent?.headers['x-goog-api-key']).toBe('AIza-test');
    expect(sent?.body).toEqual({
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { sky: 'clear' } } },
            { text: 'And this?' },
            { inlineData: { mimeType: 'image/png', data: 'iVBOR' } },
          ],
        },
      ],
      tools: [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: { type: 'object' } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: {
        maxOutputTokens: 200,
        temperature: 0.3,
        stopSequences: ['END'],
        seed: 5,
        responseMimeType: 'application/json',
        responseJsonSchema: { type: 'object' },
      },
    });
  });

  it.each([
    [[{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }], 'data: URLs'],
    [[{ role: 'tool', tool_call_id: 'nowhere', content: 'x' }], 'answers no tool call'],
    [[{ role: 'system', content: 'only a system prompt' }], 'at least one user'],
  ] as const)('refuses %j with 400 before sending anything', async (messages, named) => {
    const { adapter, upstream } = adapterFor('google', () => jsonResponse(googlePlain));
    await expect(
      adapter.complete({
        credential: { apiKey: 'k', baseUrl: providerCatalog.google.baseUrl },
        request: { model: 'gemini-2.5-flash', messages: messages as unknown as ChatRequest['messages'] },
      }),
    ).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining(named) });
    expect(upstream.requests).toEqual([]);
  });

  it('refuses a model id that could change the request path', async () => {
    const { adapter, upstream } = adapterFor('google', () => jsonResponse(googlePlain));
    await expect(
      adapter.complete({
        credential: { apiKey: 'k', baseUrl: providerCatalog.google.baseUrl },
        request: { model: '../files/x', messages: hi },
      }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(upstream.requests).toEqual([]);
  });
});
