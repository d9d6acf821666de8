/**
 * The built-in `mock` provider: no network, no key. Model `echo` answers with a fixed transform of
 * the last user message, counted by the deterministic tokenizer, so every run of the same request
 * yields the same text and the same usage. `MOCK_PROVIDER_LATENCY_MS` delays the answer (or the
 * first chunk) to stand in for a real upstream's think time.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, ChatUsage } from '../../openai/chat-schemas.ts';
import { countPromptTokens, messageText } from '../../tokens/count-prompt-tokens.ts';
import { tokenize } from '../../tokens/tokenize.ts';
import { outputTokenCap } from '#shared/providers/provider-catalog.ts';
import type { ProviderAdapter, ProviderContext } from '../provider.ts';

export const mockModels = ['echo'] as const;

interface MockAnswer {
  tokens: string[];
  finishReason: 'stop' | 'length';
  usage: ChatUsage;
}

/** The text `mock:echo` answers: the last user message, quoted back. */
export function echoText(request: ChatRequest): string {
  const lastUser = request.messages.findLast((message) => message.role === 'user');
  const said = lastUser === undefined ? '' : messageText(lastUser).trim();
  return said === '' ? 'Echo: (no user message)' : `Echo: ${said}`;
}

function answer(request: ChatRequest, context: ProviderContext): MockAnswer {
  if (!(mockModels as readonly string[]).includes(request.model)) {
    throw new FaucetError('invalid_request', `The mock provider has no model "${request.model}"; use mock:echo.`);
  }
  const limit = request.max_completion_tokens ?? request.max_tokens ?? outputTokenCap('mock', request.model, context.priceCatalog);
  const all = tokenize(echoText(request));
  const tokens = all.slice(0, limit);
  const promptTokens = countPromptTokens(request.messages, request.tools);
  return {
    tokens,
    finishReason: tokens.length < all.length ? 'length' : 'stop',
    usage: { prompt_tokens: promptTokens, completion_tokens: tokens.length, total_tokens: promptTokens + tokens.length },
  };
}

export function createMockAdapter(context: ProviderContext): ProviderAdapter {
  return {
    async complete(call) {
      const result = answer(call.request, context);
      await pause(context.mockLatencyMs, call.signal);
      const completion: ChatCompletion = {
        id: `chatcmpl-mock-${crypto.randomUUID()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: call.request.model,
        choices: [{ index: 0, message: { role: 'assistant', content: result.tokens.join('') }, finish_reason: result.finishReason }],
        usage: result.usage,
      };
      return completion;
    },

    async stream(call) {
      const result = answer(call.request, context);
      await pause(context.mockLatencyMs, call.signal);
      return mockChunks(result, call.request.model);
    },
  };
}

async function* mockChunks(result: MockAnswer, model: string): AsyncGenerator<ChatCompletionChunk> {
  const base = {
    id: `chatcmpl-mock-${crypto.randomUUID()}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
  };
  yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] };
  for (const token of result.tokens) {
    yield { ...base, choices: [{ index: 0, delta: { content: token }, finish_reason: null }] };
  }
  yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: result.finishReason }] };
  yield { ...base, choices: [], usage: result.usage };
}

function pause(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  if (milliseconds <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new FaucetError('upstream_error', 'The call was cancelled before the upstream finished.'));
      },
      { once: true },
    );
  });
}
