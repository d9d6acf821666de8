/**
 * Every provider adapter against recorded-shaped bodies of its provider (fixtures/<provider>/, no
 * network): plain, streamed, tool call, cached tokens, reasoning tokens where the provider reports
 * them, and its error bodies. Each answer's usage is checked as the usage record's token classes and
 * as the rated amount to the 8th decimal: every row names its expected upstream cost and retail, worked
 * out by hand from the pinned catalog's per-million prices (or `unpriced` where the catalog has none).
 */
import { describe, expect, it } from 'vitest';
import { formatUsd } from '#shared/money/index.ts';
import { providerCatalog, type ProviderName } from '#shared/providers/provider-catalog.ts';
import { tokenUsage, type TokenUsage } from '#shared/providers/token-usage.ts';
import { defaultRatingSettings, rateUsage } from '#shared/rating/index.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { fakeUpstream, jsonResponse, type RecordedRequest } from '../../../test/fake-upstream.ts';
import { meteredUsage, ratingTokens } from '../metering/metered-usage.ts';
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, ChatUsage } from '../openai/chat-schemas.ts';
import { createAdapter } from './create-adapter.ts';
import anthropicCacheWrite from './fixtures/anthropic/cache-write.json';
import anthropicCacheWrite1h from './fixtures/anthropic/cache-write-1h.json';
import anthropicCached from './fixtures/anthropic/cached.json';
import anthropic400 from './fixtures/anthropic/error-400.json';
import anthropic429 from './fixtures/anthropic/error-429.json';
import anthropic529 from './fixtures/anthropic/error-529.json';
import anthropicPlain from './fixtures/anthropic/plain.json';
import anthropicStream from './fixtures/anthropic/stream.sse?raw';
import anthropicStream1h from './fixtures/anthropic/stream-1h.sse?raw';
import anthropicToolCall from './fixtures/anthropic/tool-call.json';
import azureCached from './fixtures/azure/cached.json';
import azure404 from './fixtures/azure/error-404.json';
import azure429 from './fixtures/azure/error-429.json';
import azure500 from './fixtures/azure/error-500.json';
import azurePlain from './fixtures/azure/plain.json';
import azureStream from './fixtures/azure/stream.sse?raw';
import azureToolCall from './fixtures/azure/tool-call.json';
import custom400 from './fixtures/custom/error-400.json';
import custom500 from './fixtures/custom/error-500.json';
import customPlain from './fixtures/custom/plain.json';
import customStream from './fixtures/custom/stream.sse?raw';
import customToolCall from './fixtures/custom/tool-call.json';
import deepseekCached from './fixtures/deepseek/cached.json';
import deepseek400 from './fixtures/deepseek/error-400.json';
import deepseek429 from './fixtures/deepseek/error-429.json';
import deepseek503 from './fixtures/deepseek/error-503.json';
import deepseekPlain from './fixtures/deepseek/plain.json';
import deepseekReasoning from './fixtures/deepseek/reasoning.json';
import deepseekStream from './fixtures/deepseek/stream.sse?raw';
import deepseekToolCall from './fixtures/deepseek/tool-call.json';
import fireworksCached from './fixtures/fireworks/cached.json';
import fireworks400 from './fixtures/fireworks/error-400.json';
import fireworks429 from './fixtures/fireworks/error-429.json';
import fireworks500 from './fixtures/fireworks/error-500.json';
import fireworksPlain from './fixtures/fireworks/plain.json';
import fireworksStream from './fixtures/fireworks/stream.sse?raw';
import fireworksToolCall from './fixtures/fireworks/tool-call.json';
import googleCached from './fixtures/google/cached.json';
import google400 from './fixtures/google/error-400.json';
import google429 from './fixtures/google/error-429.json';
import google503 from './fixtures/google/error-503.json';
import googlePlain from './fixtures/google/plain.json';
import googleStream from './fixtures/google/stream.sse?raw';
import googleToolCall from './fixtures/google/tool-call.json';
import groqCached from './fixtures/groq/cached.json';
import groq400 from './fixtures/groq/error-400.json';
import groq429 from './fixtures/groq/error-429.json';
import groq500 from './fixtures/groq/error-500.json';
import groqPlain from './fixtures/groq/plain.json';
import groqReasoning from './fixtures/groq/reasoning.json';
import groqStream from './fixtures/groq/stream.sse?raw';
import groqToolCall from './fixtures/groq/tool-call.json';
import mistral422 from './fixtures/mistral/error-422.json';
import mistral429 from './fixtures/mistral/error-429.json';
import mistral500 from './fixtures/mistral/error-500.json';
import mistralPlain from './fixtures/mistral/plain.json';
import mistralStream from './fixtures/mistral/stream.sse?raw';
import mistralToolCall from './fixtures/mistral/tool-call.json';
import openaiCached from './fixtures/openai/cached.json';
import openai400 from './fixtures/openai/error-400.json';
import openai429 from './fixtures/openai/error-429.json';
import openai500 from './fixtures/openai/error-500.json';
import openaiPlain from './fixtures/openai/plain.json';
import openaiReasoning from './fixtures/openai/reasoning.json';
import openaiStream from './fixtures/openai/stream.sse?raw';
import openaiToolCall from './fixtures/openai/tool-call.json';
import openrouterCached from './fixtures/openrouter/cached.json';
import openrouter400 from './fixtures/openrouter/error-400.json';
import openrouter402 from './fixtures/openrouter/error-402.json';
import openrouter429 from './fixtures/openrouter/error-429.json';
import openrouterPlain from './fixtures/openrouter/plain.json';
import openrouterReasoning from './fixtures/openrouter/reasoning.json';
import openrouterStream from './fixtures/openrouter/stream.sse?raw';
import openrouterToolCall from './fixtures/openrouter/tool-call.json';
import together400 from './fixtures/together/error-400.json';
import together429 from './fixtures/together/error-429.json';
import together500 from './fixtures/together/error-500.json';
import togetherPlain from './fixtures/together/plain.json';
import togetherStream from './fixtures/together/stream.sse?raw';
import togetherToolCall from './fixtures/together/tool-call.json';
import xai400 from './fixtures/xai/error-400.json';
import xai429 from './fixtures/xai/error-429.json';
import xai500 from './fixtures/xai/error-500.json';
import xaiReasoning from './fixtures/xai/reasoning.json';
import xaiStream from './fixtures/xai/stream.sse?raw';
import xaiToolCall from './fixtures/xai/tool-call.json';

type Kind = 'plain' | 'stream' | 'tool call' | 'cached tokens' | 'cache writes' | 'reasoning tokens';

interface AnswerCase {
  kind: Kind;
  body: unknown;
  /** The usage record's token classes. */
  tokens: Partial<TokenUsage>;
  /**
   * Platform-route upstream cost and retail (default settings, priced at `pricedAt`), computed by hand
   * from the pinned catalog's per-million prices; `unpriced` where the catalog has no price for the model.
   */
  rated: { upstream: string; retail: string } | 'unpriced';
}

interface ProviderFixtures {
  provider: ProviderName;
  /** The model the request names (what the catalog prices). */
  model: string;
  /** The credential's API root (the catalog's, or one an account names). */
  baseUrl: string;
  /** Where the adapter must post, non-streaming and streaming. */
  url: { complete: string; stream: string };
  /** The header the key travels in. */
  keyHeader: string;
  answers: AnswerCase[];
  errors: Array<{ status: number; body: unknown; code: FaucetError['code'] }>;
}

const apiKey = 'test-key-0123456789abcdefghij';
/** Inside DeepSeek's 00:30–16:30 UTC period (0.27 / 0.07 cached / 1.10), after every other model's last price change. */
const pricedAt = new Date('2026-01-15T12:00:00Z');
const chatUrl = (root: string) => ({ complete: `${root}/chat/completions`, stream: `${root}/chat/completions` });
const commonErrors = (bad: unknown, limited: unknown, failed: unknown, badStatus = 400, failedStatus = 500) => [
  { status: badStatus, body: bad, code: 'invalid_request' as const },
  { status: 429, body: limited, code: 'rate_limited' as const },
  { status: failedStatus, body: failed, code: 'upstream_error' as const },
];

const table: ProviderFixtures[] = [
  {
    provider: 'openai',
    model: 'gpt-4o-mini',
    baseUrl: 'https://api.openai.com/v1',
    url: chatUrl('https://api.openai.com/v1'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: openaiPlain, tokens: { input: 24, output: 8 }, rated: { upstream: '0.00000840', retail: '0.00001008' } },
      {
        kind: 'tool call',
        body: openaiToolCall,
        tokens: { input: 81, output: 16 },
        rated: { upstream: '0.00002175', retail: '0.00002610' },
      },
      {
        kind: 'cached tokens',
        body: openaiCached,
        tokens: { input: 86, cachedInput: 1_920, output: 300 },
        rated: { upstream: '0.00033690', retail: '0.00040428' },
      },
      {
        kind: 'reasoning tokens',
        body: openaiReasoning,
        tokens: { input: 13, output: 210, reasoning: 192 },
        rated: { upstream: '0.00012795', retail: '0.00015354' },
      },
      {
        kind: 'stream',
        body: openaiStream,
        tokens: { input: 144, cachedInput: 1_408, output: 2 },
        rated: { upstream: '0.00012840', retail: '0.00015408' },
      },
    ],
    errors: commonErrors(openai400, openai429, openai500),
  },
  {
    provider: 'anthropic',
    model: 'claude-haiku-4-5',
    baseUrl: 'https://api.anthropic.com/v1',
    url: { complete: 'https://api.anthropic.com/v1/messages', stream: 'https://api.anthropic.com/v1/messages' },
    keyHeader: 'x-api-key',
    answers: [
      { kind: 'plain', body: anthropicPlain, tokens: { input: 14, output: 10 }, rated: { upstream: '0.00006400', retail: '0.00007680' } },
      {
        kind: 'tool call',
        body: anthropicToolCall,
        tokens: { input: 384, output: 58 },
        rated: { upstream: '0.00067400', retail: '0.00080880' },
      },
      {
        kind: 'cached tokens',
        body: anthropicCached,
        tokens: { input: 36, cachedInput: 2_048, output: 120 },
        rated: { upstream: '0.00084080', retail: '0.00100896' },
      },
      {
        kind: 'cache writes',
        body: anthropicCacheWrite,
        tokens: { input: 21, cacheWrite: 3_072, output: 15 },
        rated: { upstream: '0.00393600', retail: '0.00472320' },
      },
      // Input counts in message_start and again in message_delta; output only final in message_delta.
      {
        kind: 'stream',
        body: anthropicStream,
        tokens: { input: 12, cacheWrite: 1_100, cachedInput: 2_048, output: 25 },
        rated: { upstream: '0.00171680', retail: '0.00206016' },
      },
      // One-hour writes (`cache_creation`, written by hand in the shape Anthropic documents): 18 × 1 +
      // 1,000 × 1.25 + 4,000 × 2 (the one-hour write price) + 12 × 5 per million.
      {
        kind: 'cache writes',
        body: anthropicCacheWrite1h,
        tokens: { input: 18, cacheWrite: 1_000, cacheWrite1h: 4_000, output: 12 },
        rated: { upstream: '0.00932800', retail: '0.01119360' },
      },
      // Streamed: the split comes in message_start and is kept when message_delta leaves it out.
      // 12 × 1 + 500 × 1.25 + 2,000 × 2 + 25 × 5 per million.
      {
        kind: 'stream',
        body: anthropicStream1h,
        tokens: { input: 12, cacheWrite: 500, cacheWrite1h: 2_000, output: 25 },
        rated: { upstream: '0.00476200', retail: '0.00571440' },
      },
    ],
    errors: commonErrors(anthropic400, anthropic429, anthropic529, 400, 529),
  },
  {
    provider: 'google',
    model: 'gemini-2.5-flash',
    baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
    url: {
      complete: 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent',
      stream: 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    },
    keyHeader: 'x-goog-api-key',
    answers: [
      // Thinking is reported apart from the answer and billed as output.
      {
        kind: 'reasoning tokens',
        body: googlePlain,
        tokens: { input: 8, output: 619, reasoning: 611 },
        rated: { upstream: '0.00154990', retail: '0.00185988' },
      },
      {
        kind: 'tool call',
        body: googleToolCall,
        tokens: { input: 57, output: 86, reasoning: 71 },
        rated: { upstream: '0.00023210', retail: '0.00027852' },
      },
      {
        kind: 'cached tokens',
        body: googleCached,
        tokens: { input: 140, cachedInput: 3_980, output: 9 },
        rated: { upstream: '0.00018390', retail: '0.00022068' },
      },
      // Each event's usageMetadata is a running total: the last one is the call's.
      {
        kind: 'stream',
        body: googleStream,
        tokens: { input: 8, output: 414, reasoning: 412 },
        rated: { upstream: '0.00103740', retail: '0.00124488' },
      },
    ],
    errors: commonErrors(google400, google429, google503, 400, 503),
  },
  {
    provider: 'mistral',
    model: 'mistral-small-latest',
    baseUrl: 'https://api.mistral.ai/v1',
    url: chatUrl('https://api.mistral.ai/v1'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: mistralPlain, tokens: { input: 10, output: 9 }, rated: { upstream: '0.00000370', retail: '0.00000444' } },
      {
        kind: 'tool call',
        body: mistralToolCall,
        tokens: { input: 90, output: 22 },
        rated: { upstream: '0.00001560', retail: '0.00001872' },
      },
      { kind: 'stream', body: mistralStream, tokens: { input: 10, output: 2 }, rated: { upstream: '0.00000160', retail: '0.00000192' } },
    ],
    errors: commonErrors(mistral422, mistral429, mistral500, 422),
  },
  {
    provider: 'groq',
    model: 'llama-3.3-70b-versatile',
    baseUrl: 'https://api.groq.com/openai/v1',
    url: chatUrl('https://api.groq.com/openai/v1'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: groqPlain, tokens: { input: 42, output: 8 }, rated: { upstream: '0.00003110', retail: '0.00003732' } },
      {
        kind: 'tool call',
        body: groqToolCall,
        tokens: { input: 224, output: 19 },
        rated: { upstream: '0.00014717', retail: '0.00017661' },
      },
      {
        kind: 'reasoning tokens',
        body: groqReasoning,
        tokens: { input: 78, output: 141, reasoning: 128 },
        rated: { upstream: '0.00015741', retail: '0.00018890' },
      },
      {
        kind: 'cached tokens',
        body: groqCached,
        tokens: { input: 664, cachedInput: 1_536, output: 7 },
        rated: { upstream: '0.00130353', retail: '0.00156424' },
      },
      // The stream's usage arrives in x_groq.usage of the last chunk.
      { kind: 'stream', body: groqStream, tokens: { input: 42, output: 2 }, rated: { upstream: '0.00002636', retail: '0.00003164' } },
    ],
    errors: commonErrors(groq400, groq429, groq500),
  },
  {
    provider: 'deepseek',
    model: 'deepseek-chat',
    baseUrl: 'https://api.deepseek.com',
    url: chatUrl('https://api.deepseek.com'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: deepseekPlain, tokens: { input: 12, output: 8 }, rated: { upstream: '0.00001204', retail: '0.00001445' } },
      // prompt_cache_hit_tokens alone (no prompt_tokens_details) still counts as cache reads.
      {
        kind: 'cached tokens',
        body: deepseekCached,
        tokens: { input: 86, cachedInput: 1_984, output: 9 },
        rated: { upstream: '0.00017200', retail: '0.00020640' },
      },
      {
        kind: 'tool call',
        body: deepseekToolCall,
        tokens: { input: 38, cachedInput: 128, output: 21 },
        rated: { upstream: '0.00004232', retail: '0.00005079' },
      },
      {
        kind: 'reasoning tokens',
        body: deepseekReasoning,
        tokens: { input: 18, output: 412, reasoning: 398 },
        rated: { upstream: '0.00045806', retail: '0.00054968' },
      },
      {
        kind: 'stream',
        body: deepseekStream,
        tokens: { input: 76, cachedInput: 1_024, output: 2 },
        rated: { upstream: '0.00009440', retail: '0.00011328' },
      },
    ],
    errors: commonErrors(deepseek400, deepseek429, deepseek503, 400, 503),
  },
  {
    provider: 'xai',
    model: 'grok-3-mini',
    baseUrl: 'https://api.x.ai/v1',
    url: chatUrl('https://api.x.ai/v1'),
    keyHeader: 'authorization',
    answers: [
      // xAI's completion_tokens leave the reasoning out (total = 32 + 9 + 94): it is billed as output.
      {
        kind: 'reasoning tokens',
        body: xaiReasoning,
        tokens: { input: 26, cachedInput: 6, output: 103, reasoning: 94 },
        rated: { upstream: '0.00005975', retail: '0.00007170' },
      },
      {
        kind: 'tool call',
        body: xaiToolCall,
        tokens: { input: 31, cachedInput: 384, output: 27 },
        rated: { upstream: '0.00005160', retail: '0.00006192' },
      },
      {
        kind: 'stream',
        body: xaiStream,
        tokens: { input: 14, output: 216, reasoning: 214 },
        rated: { upstream: '0.00011220', retail: '0.00013464' },
      },
    ],
    errors: commonErrors(xai400, xai429, xai500),
  },
  {
    provider: 'together',
    model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    baseUrl: 'https://api.together.xyz/v1',
    url: chatUrl('https://api.together.xyz/v1'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: togetherPlain, tokens: { input: 44, output: 8 }, rated: { upstream: '0.00004576', retail: '0.00005492' } },
      {
        kind: 'tool call',
        body: togetherToolCall,
        tokens: { input: 223, output: 22 },
        rated: { upstream: '0.00021560', retail: '0.00025872' },
      },
      { kind: 'stream', body: togetherStream, tokens: { input: 44, output: 2 }, rated: { upstream: '0.00004048', retail: '0.00004858' } },
    ],
    errors: commonErrors(together400, together429, together500),
  },
  {
    provider: 'fireworks',
    model: 'accounts/fireworks/models/llama-v3p1-8b-instruct',
    baseUrl: 'https://api.fireworks.ai/inference/v1',
    url: chatUrl('https://api.fireworks.ai/inference/v1'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: fireworksPlain, tokens: { input: 19, output: 8 }, rated: { upstream: '0.00000540', retail: '0.00000648' } },
      {
        kind: 'cached tokens',
        body: fireworksCached,
        tokens: { input: 28, cachedInput: 3_072, output: 9 },
        rated: { upstream: '0.00062180', retail: '0.00074616' },
      },
      {
        kind: 'tool call',
        body: fireworksToolCall,
        tokens: { input: 180, output: 24 },
        rated: { upstream: '0.00004080', retail: '0.00004896' },
      },
      { kind: 'stream', body: fireworksStream, tokens: { input: 19, output: 2 }, rated: { upstream: '0.00000420', retail: '0.00000504' } },
    ],
    errors: commonErrors(fireworks400, fireworks429, fireworks500),
  },
  {
    provider: 'openrouter',
    model: 'anthropic/claude-sonnet-4.5',
    baseUrl: 'https://openrouter.ai/api/v1',
    url: chatUrl('https://openrouter.ai/api/v1'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: openrouterPlain, tokens: { input: 14, output: 9 }, rated: { upstream: '0.00017700', retail: '0.00021240' } },
      {
        kind: 'cached tokens',
        body: openrouterCached,
        tokens: { input: 18, cachedInput: 3_072, output: 11 },
        rated: { upstream: '0.00114060', retail: '0.00136872' },
      },
      {
        kind: 'reasoning tokens',
        body: openrouterReasoning,
        tokens: { input: 20, output: 330, reasoning: 320 },
        rated: { upstream: '0.00501000', retail: '0.00601200' },
      },
      {
        kind: 'tool call',
        body: openrouterToolCall,
        tokens: { input: 82, output: 15 },
        rated: { upstream: '0.00047100', retail: '0.00056520' },
      },
      // With OpenRouter's ": OPENROUTER PROCESSING" comments between events.
      { kind: 'stream', body: openrouterStream, tokens: { input: 14, output: 4 }, rated: { upstream: '0.00010200', retail: '0.00012240' } },
    ],
    errors: [
      { status: 400, body: openrouter400, code: 'invalid_request' },
      // Out of credits is the platform's problem, not the caller's.
      { status: 402, body: openrouter402, code: 'upstream_error' },
      { status: 429, body: openrouter429, code: 'rate_limited' },
    ],
  },
  {
    provider: 'azure',
    model: 'gpt-4o-mini',
    baseUrl: 'https://faucet-test.openai.azure.com/openai',
    url: {
      complete: 'https://faucet-test.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21',
      stream: 'https://faucet-test.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21',
    },
    keyHeader: 'api-key',
    answers: [
      { kind: 'plain', body: azurePlain, tokens: { input: 24, output: 8 }, rated: { upstream: '0.00000840', retail: '0.00001008' } },
      {
        kind: 'tool call',
        body: azureToolCall,
        tokens: { input: 79, output: 15 },
        rated: { upstream: '0.00002085', retail: '0.00002502' },
      },
      {
        kind: 'cached tokens',
        body: azureCached,
        tokens: { input: 148, cachedInput: 1_152, output: 9 },
        rated: { upstream: '0.00011400', retail: '0.00013680' },
      },
      // Starts with Azure's prompt_filter_results chunk (no id, no choices).
      { kind: 'stream', body: azureStream, tokens: { input: 24, output: 2 }, rated: { upstream: '0.00000480', retail: '0.00000576' } },
    ],
    errors: commonErrors(azure404, azure429, azure500, 404),
  },
  {
    provider: 'custom',
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    baseUrl: 'https://llm.example.com/v1',
    url: chatUrl('https://llm.example.com/v1'),
    keyHeader: 'authorization',
    answers: [
      { kind: 'plain', body: customPlain, tokens: { input: 43, output: 8 }, rated: 'unpriced' },
      { kind: 'tool call', body: customToolCall, tokens: { input: 187, output: 20 }, rated: 'unpriced' },
      { kind: 'stream', body: customStream, tokens: { input: 43, output: 2 }, rated: 'unpriced' },
    ],
    errors: commonErrors(custom400, custom400, custom500).filter((error) => error.status !== 429),
  },
];

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

function requestFor(fixtures: ProviderFixtures, kind: Kind): ChatRequest {
  return {
    model: fixtures.model,
    messages: [{ role: 'user', content: kind === 'tool call' ? 'Weather in Paris?' : 'Capital of France?' }],
    ...(kind === 'tool call' ? { tools: [weatherTool] } : {}),
  };
}

function adapterAnswering(fixtures: ProviderFixtures, answer: (request: RecordedRequest) => Response) {
  const upstream = fakeUpstream(answer);
  const adapter = createAdapter(providerCatalog[fixtures.provider], { fetch: upstream.fetch, upstreamTimeoutMs: 5_000, mockLatencyMs: 0 });
  return { adapter, upstream, credential: { apiKey, baseUrl: fixtures.baseUrl } };
}

function sse(text: string): Response {
  return new Response(text, { headers: { 'content-type': 'text/event-stream' } });
}

async function collect(chunks: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const all: ChatCompletionChunk[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return all;
}

function expectKeySent(request: RecordedRequest | undefined, fixtures: ProviderFixtures): void {
  const sent = request?.headers[fixtures.keyHeader];
  expect(sent).toBe(fixtures.keyHeader === 'authorization' ? `Bearer ${apiKey}` : apiKey);
  if (fixtures.keyHeader !== 'authorization') expect(request?.headers.authorization).toBeUndefined();
}

function expectUsage(fixtures: ProviderFixtures, answer: AnswerCase, usage: ChatUsage | null | undefined): void {
  const metered = meteredUsage(usage, () => {
    throw new Error(`${fixtures.provider} ${answer.kind}: no usage reported`);
  });
  expect(metered).toEqual({ tokens: tokenUsage(answer.tokens), estimated: false });
  const toRate = { routeMode: 'platform', provider: fixtures.provider, model: fixtures.model, ...ratingTokens(metered), pricedAt };
  if (answer.rated === 'unpriced') {
    expect(() => rateUsage(toRate, {}, defaultRatingSettings)).toThrow(expect.objectContaining({ reason: 'unknown_model' }));
    return;
  }
  const rated = rateUsage(toRate, {}, defaultRatingSettings);
  expect({ upstream: formatUsd(rated.upstreamCostUsd), retail: formatUsd(rated.retailUsd) }).toEqual(answer.rated);
}

describe.each(table)('the $provider adapter against its recorded bodies', (fixtures) => {
  it.each(fixtures.answers)('$kind: the answer in OpenAI shape, its usage record and its rated amount', async (answer) => {
    const streaming = answer.kind === 'stream';
    const { adapter, upstream, credential } = adapterAnswering(fixtures, () =>
      streaming ? sse(answer.body as string) : jsonResponse(answer.body),
    );
    const request = requestFor(fixtures, answer.kind);
    if (streaming) {
      const chunks = await collect(await adapter.stream({ credential, request: { ...request, stream: true } }));
      expect(upstream.requests[0]?.url).toBe(fixtures.url.stream);
      expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Paris.');
      expect(chunks.some((chunk) => chunk.choices.some((choice) => choice.finish_reason === 'stop'))).toBe(true);
      // The usage the metered stream books: the last one reported.
      expectUsage(fixtures, answer, chunks.findLast((chunk) => chunk.usage != null)?.usage);
    } else {
      const completion: ChatCompletion = await adapter.complete({ credential, request });
      expect(upstream.requests[0]?.url).toBe(fixtures.url.complete);
      const [choice] = completion.choices;
      if (answer.kind === 'tool call') {
        expect(choice?.finish_reason).toBe('tool_calls');
        expect(choice?.message.tool_calls?.[0]?.function.name).toBe('get_weather');
        expect(JSON.parse(choice?.message.tool_calls?.[0]?.function.arguments ?? 'null')).toEqual({ city: 'Paris' });
      } else {
        expect(choice?.finish_reason).toBe('stop');
        expect(choice?.message.content).toMatch(/\w/);
      }
      expectUsage(fixtures, answer, completion.usage);
    }
    expectKeySent(upstream.requests[0], fixtures);
  });

  it.each(fixtures.errors)('HTTP $status: the error body becomes $code, without the key', async (error) => {
    const headers: Record<string, string> = error.status === 429 ? { 'retry-after': '7' } : {};
    const { adapter, credential } = adapterAnswering(fixtures, () => jsonResponse(error.body, error.status, headers));
    for (const streaming of [false, true]) {
      const request = { ...requestFor(fixtures, 'plain'), stream: streaming };
      const failure = await (streaming ? adapter.stream({ credential, request }) : adapter.complete({ credential, request })).catch(
        (thrown: unknown) => thrown,
      );
      expect(FaucetError.isInstance(failure)).toBe(true);
      expect(failure).toMatchObject({ code: error.code });
      expect((failure as FaucetError).message).not.toContain(apiKey);
      if (error.code === 'rate_limited') expect((failure as FaucetError).headers).toMatchObject({ 'retry-after': '7' });
    }
  });
});

describe('every routable provider', () => {
  it('has recorded bodies for plain or reasoning answers, a stream, a tool call, and its errors', () => {
    const covered = new Set(table.map((fixtures) => fixtures.provider));
    const routable = (Object.keys(providerCatalog) as ProviderName[]).filter((provider) => provider !== 'mock');
    expect([...covered].sort()).toEqual(routable.sort());
    for (const fixtures of table) {
      expect(fixtures.answers.map((answer) => answer.kind)).toContain('stream');
      expect(fixtures.answers.map((answer) => answer.kind)).toContain('tool call');
      expect(fixtures.errors.length).toBeGreaterThan(1);
    }
  });
});
