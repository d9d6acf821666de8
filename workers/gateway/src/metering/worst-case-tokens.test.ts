import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatMessage, ChatRequest } from '../openai/chat-schemas.ts';
import { countPromptTokens } from '../tokens/count-prompt-tokens.ts';
import { countTokens } from '../tokens/tokenize.ts';
import { worstCaseInputTokens, worstCaseOutputTokens } from './worst-case-tokens.ts';

const gpt4oMini = { provider: 'openai', model: 'gpt-4o-mini' };
const request = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: 'gpt-4o-mini', messages, ...extra });
const bytes = (text: string) => new TextEncoder().encode(text).byteLength;
const look: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'look' }] }];
const image = (count: number): ChatMessage[] => [
  {
    role: 'user',
    content: [
      { type: 'text', text: 'look' },
      ...Array.from({ length: count }, () => ({ type: 'image_url' as const, image_url: { url: 'https://example.com/a.png' } })),
    ],
  },
];
const extraFor = (extra: Partial<ChatRequest>) =>
  worstCaseInputTokens(request(look, extra), gpt4oMini) - worstCaseInputTokens(request(look), gpt4oMini);

describe('worst-case input tokens of a call', () => {
  it('bounds the prompt by its UTF-8 bytes, so no tokenizer can count more', () => {
    const texts = ['Hello there', '東京タワーはどこですか', '🚀🚀🚀 emoji heavy 🚀🚀🚀', 'a'.repeat(5000)];
    for (const text of texts) {
      const messages: ChatMessage[] = [{ role: 'user', content: text }];
      const bound = worstCaseInputTokens(request(messages), gpt4oMini);
      expect(bound).toBeGreaterThanOrEqual(bytes(text));
      expect(bound).toBeGreaterThanOrEqual(countPromptTokens(messages));
    }
  });

  it("holds each image on gpt-4o-mini at OpenAI's high-detail maximum: 2,833 + 8 tiles × 5,667", () => {
    expect(worstCaseInputTokens(request(image(3)), gpt4oMini) - worstCaseInputTokens(request(look), gpt4oMini)).toBeGreaterThanOrEqual(
      3 * 48_169,
    );
  });

  it('holds images on the other catalog models at their own formula maximum', () => {
    const extra = (provider: string, model: string) =>
      worstCaseInputTokens(request(image(1), { model }), { provider, model }) -
      worstCaseInputTokens(request(look, { model }), { provider, model });
    expect(extra('openai', 'gpt-4.1-mini')).toBeGreaterThanOrEqual(Math.ceil(1_536 * 1.62));
    expect(extra('anthropic', 'claude-sonnet-4-5')).toBeGreaterThanOrEqual(1_600);
  });

  it('refuses an image part for a model with no known image bound, naming the part', () => {
    const unknown = { provider: 'openai', model: 'gpt-9-vision' };
    const messages: ChatMessage[] = [{ role: 'system', content: 'be brief' }, ...image(1)];
    const failure = (() => {
      try {
        return worstCaseInputTokens(request(messages), unknown);
      } catch (error) {
        return error;
      }
    })();
    expect(FaucetError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({
      code: 'invalid_request',
      message: 'messages[1].content[1]: image parts cannot be bounded for model "openai:gpt-9-vision".',
    });
  });

  it('counts legacy functions and function_call by the bytes of their JSON, plus the hidden tool prompt', () => {
    const functions = [
      {
        name: 'lookup_weather',
        description: '天気を調べる '.repeat(200),
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    expect(extraFor({ functions })).toBeGreaterThanOrEqual(bytes(JSON.stringify(functions)) + 1_000);
    expect(extraFor({ functions, function_call: { name: 'lookup_weather' } })).toBeGreaterThan(extraFor({ functions }));
  });

  it('counts a json_schema response format and a named tool choice by their bytes', () => {
    const response_format = { type: 'json_schema' as const, json_schema: { name: 'answer', schema: { description: 'x'.repeat(4_000) } } };
    expect(extraFor({ response_format })).toBeGreaterThanOrEqual(bytes(JSON.stringify(response_format)));
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    const named = { type: 'function' as const, function: { name: 'f'.repeat(300) } };
    expect(extraFor({ tools, tool_choice: named }) - extraFor({ tools })).toBeGreaterThanOrEqual(300);
  });

  it('counts tool call ids, tool call arguments and legacy assistant function calls', () => {
    const history: ChatMessage[] = [
      ...look,
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: `{"q":"${'é'.repeat(500)}"}` } }],
      },
      { role: 'tool', tool_call_id: 'call_'.repeat(100), content: 'ok' },
      { role: 'assistant', content: null, function_call: { name: 'g', arguments: 'z'.repeat(700) } },
    ];
    expect(worstCaseInputTokens(request(history), gpt4oMini) - worstCaseInputTokens(request(look), gpt4oMini)).toBeGreaterThanOrEqual(
      1_000 + 500 + 700,
    );
  });

  it('is never below what the tokenizer counts, for random prompts, tools, functions and schemas in any script', () => {
    const glyph = fc.oneof(
      fc.constantFrom('東', '京', 'タ', 'ワ', '한', '字', '🚀', '👨‍👩‍👧', '🇯🇵', 'é', ' ', '\n', '"', '\\'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    );
    const text = fc.string({ unit: glyph, maxLength: 200 });
    const content = fc.oneof(
      text,
      fc.array(
        text.map((part) => ({ type: 'text' as const, text: part })),
        { maxLength: 3 },
      ),
    );
    const message = fc.record(
      { role: fc.constantFrom('system' as const, 'user' as const, 'assistant' as const), content, name: text },
      { requiredKeys: ['role', 'content'] },
    );
    const definition = fc.record({
      name: text,
      description: text,
      parameters: fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    });
    const schema = fc.record({
      type: fc.constant('json_schema' as const),
      json_schema: fc.record({ name: text, schema: fc.dictionary(text, fc.jsonValue({ maxDepth: 2 })) }),
    });
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 4 }),
        fc.array(definition, { maxLength: 2 }),
        fc.option(schema, { nil: undefined }),
        (messages, functions, response_format) => {
          const tools = functions.map((definition) => ({ type: 'function' as const, function: definition }));
          const call = request(messages, { tools, functions, ...(response_format ? { response_format } : {}) });
          const counted =
            countPromptTokens(messages, tools) +
            countTokens(JSON.stringify(functions)) +
            (response_format ? countTokens(JSON.stringify(response_format)) : 0);
          expect(worstCaseInputTokens(call, gpt4oMini)).toBeGreaterThanOrEqual(counted);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('worst-case output tokens of a call', () => {
  it("takes max_completion_tokens, then max_tokens, then the model's output cap", () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    expect(worstCaseOutputTokens(request(messages, { max_completion_tokens: 10, max_tokens: 20 }), 'openai')).toBe(10);
    expect(worstCaseOutputTokens(request(messages, { max_tokens: 20 }), 'openai')).toBe(20);
    expect(worstCaseOutputTokens(request(messages), 'openai')).toBe(16_384);
    expect(worstCaseOutputTokens(request(messages, { model: 'unknown-model' }), 'openai')).toBe(4_096);
  });
});
