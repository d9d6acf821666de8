/**
 * Fields a hostile client adds to a chat call: each one that could change what the provider bills
 * (or keep the end user's prompt upstream) is refused with 400 before any hold, and only allowed
 * fields reach the upstream. Images and legacy functions are held at their true worst case.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { compareUsd, formatUsd, type Usd } from '#shared/money/index.ts';
import { rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import type { TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  chat,
  expectNothingHeldOrBooked,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  heldForCalls,
  newRequestId,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', ANTHROPIC_API_KEY: 'sk-ant-platform-pool-test' });
});

const gpt = { model: 'openai:gpt-4o-mini', feature: 'chat', max_tokens: 5, messages: [userMessage('hi')] };
const claude = { ...gpt, model: 'anthropic:claude-haiku-4-5' };
const image = { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'high' } };
const withPart = (part: Record<string, unknown>) => [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, part] }];

async function errorOf(response: Response) {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, ...body.error };
}

describe('a smuggled field', () => {
  it.each([
    [
      'service_tier "priority", billed above the catalog price',
      { ...gpt, service_tier: 'priority' },
      /service_tier.*priced|service_tier.*price/,
    ],
    ['service_tier "flex", billed below it', { ...gpt, service_tier: 'flex' }, /service_tier/],
    ['store: true, which keeps the prompt in the platform account', { ...gpt, store: true }, /store must be false/],
    ['an unknown top-level field', { ...gpt, x_upstream_option: 1 }, /field "x_upstream_option" is not accepted/],
    ['prediction', { ...gpt, prediction: { type: 'content', content: 'guess' } }, /field "prediction" is not accepted/],
    ['audio output', { ...gpt, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }, /audio/],
    ['web_search_options', { ...gpt, web_search_options: {} }, /field "web_search_options" is not accepted/],
    ['metadata', { ...gpt, metadata: { who: 'me' } }, /field "metadata" is not accepted/],
    ['prompt_cache_key', { ...gpt, prompt_cache_key: 'k' }, /field "prompt_cache_key" is not accepted/],
    [
      'an unknown field inside a message',
      { ...gpt, messages: [{ ...userMessage('hi'), cache_control: { type: 'ephemeral' } }] },
      /field "cache_control"/,
    ],
    [
      'an unknown field inside a content part',
      { ...gpt, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', extra: 1 }] }] },
      /field "extra"/,
    ],
    [
      'an unknown field inside an image part',
      { ...gpt, messages: withPart({ ...image, image_url: { url: 'https://example.com/a.png', size: 'xl' } }) },
      /field "size"/,
    ],
    ['an unknown field inside a tool', { ...gpt, tools: [{ type: 'function', function: { name: 'f', hidden: 'x' } }] }, /field "hidden"/],
    ['a tool that is not a function', { ...gpt, tools: [{ type: 'web_search_preview' }] }, /tools/],
    [
      'an input_audio part',
      { ...gpt, messages: withPart({ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }) },
      /messages\.0\.content: part 1\.type: .*cannot be bounded/,
    ],
    [
      'a file part',
      { ...gpt, messages: withPart({ type: 'file', file: { file_id: 'file-1' } }) },
      /messages\.0\.content: part 1\.type: .*cannot be bounded/,
    ],
    [
      'an image for a model with no image bound',
      { ...gpt, model: 'openai:gpt-4o', messages: withPart(image) },
      /messages\[0\]\.content\[1\]: image parts cannot be bounded for model "openai:gpt-4o"/,
    ],
    [
      'seed on an Anthropic model, which has nowhere to carry it',
      { ...claude, seed: 1 },
      /field "seed" is not accepted for anthropic models/,
    ],
    [
      'response_format on an Anthropic model',
      { ...claude, response_format: { type: 'json_object' } },
      /field "response_format" is not accepted for anthropic/,
    ],
    [
      'a message name on an Anthropic model',
      { ...claude, messages: [{ ...userMessage('hi'), name: 'mallory' }] },
      /messages\[0\]: field "name"/,
    ],
  ])('is refused with 400 before any hold: %s', async (_case, body, message) => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('should not happen')));
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, body, requestId);
    const error = await errorOf(response);
    expect(error).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(error.message).toMatch(message);
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, requestId);
    expect((await wallet(testEnv, session.walletId)).balance).toBe('1.00000000');
  });
});

describe('the fields an ordinary OpenAI client sends', () => {
  it('reach the upstream, and nothing else does', async () => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('{"city":"Paris"}')));
    const session = await fundedSession(testEnv);
    const body = {
      model: 'openai:gpt-4o-mini',
      feature: 'chat',
      messages: [{ role: 'developer', content: 'Answer in JSON.' }, userMessage('Capital of France?')],
      max_completion_tokens: 30,
      temperature: 0.5,
      top_p: 0.9,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      seed: 3,
      logprobs: true,
      top_logprobs: 2,
      stop: ['\n\n'],
      user: 'end-user-hash',
      service_tier: 'default',
      store: false,
      n: 1,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', strict: true, schema: { type: 'object', properties: { city: { type: 'string' } } } },
      },
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object' }, strict: false } }],
      tool_choice: 'auto',
      parallel_tool_calls: false,
    };
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, body);
    expect(response.status).toBe(200);
    const { feature: _feature, model: _model, ...openAiFields } = body;
    // Its first quota covers its 30 output tokens: held for them, answered whole by the provider.
    expect(upstream.requests[0]?.body).toEqual({ ...openAiFields, model: 'gpt-4o-mini', stream: false });
  });
});

describe('the hold of a call', () => {
  /** What the wallet sets aside for the call while the upstream is answering `body` (its only call). */
  async function heldDuringCall(body: Record<string, unknown>) {
    const session = await fundedSession(testEnv, '5.00000000');
    let held: Usd | undefined;
    const upstream = fakeUpstream(async () => {
      held = await heldForCalls(testEnv, session);
      return jsonResponse(openAiCompletion('ok', { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 }));
    });
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, body);
    expect(response.status).toBe(200);
    if (held === undefined) throw new Error('the upstream was not called');
    return held;
  }

  const retailOf = (inputTokens: number, outputTokens: number) =>
    rateUsage(
      { routeMode: 'platform', provider: 'openai', model: 'gpt-4o-mini', inputTokens, outputTokens, estimated: true },
      {},
      ratingSettingsFor(testEnv, null),
    ).retailUsd;

  it("holds every image on gpt-4o-mini at OpenAI's high-detail maximum (2,833 + 8 tiles × 5,667 tokens)", async () => {
    const held = await heldDuringCall({ ...gpt, max_tokens: 1, messages: [{ role: 'user', content: [image, image, image, image] }] });
    const formula = retailOf(4 * (2_833 + 8 * 5_667), 1);
    expect(compareUsd(held, formula), `held ${formatUsd(held)}, formula ${formatUsd(formula)}`).toBeGreaterThanOrEqual(0);
  });

  it('holds the bytes of legacy functions a client offers', async () => {
    const functions = [{ name: 'f', description: 'd'.repeat(60_000), parameters: { type: 'object' } }];
    const held = await heldDuringCall({ ...gpt, max_tokens: 1, functions });
    expect(compareUsd(held, retailOf(60_000, 1))).toBeGreaterThanOrEqual(0);
  });
});
