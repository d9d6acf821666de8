import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { countPromptTokens } from '../tokens/count-prompt-tokens.ts';
import { worstCaseInputTokens, worstCaseOutputTokens } from './worst-case-tokens.ts';

const request = (messages: ChatRequest['messages'], extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: 'gpt-4o-mini', messages, ...extra });

describe('worst-case tokens of a call', () => {
  it('bounds the prompt by its UTF-8 bytes, so no tokenizer can count more', () => {
    const texts = ['Hello there', '東京タワーはどこですか', '🚀🚀🚀 emoji heavy 🚀🚀🚀', 'a'.repeat(5000)];
    for (const text of texts) {
      const messages = [{ role: 'user' as const, content: text }];
      const bound = worstCaseInputTokens(request(messages));
      expect(bound).toBeGreaterThanOrEqual(new TextEncoder().encode(text).byteLength);
      expect(bound).toBeGreaterThanOrEqual(countPromptTokens(messages));
    }
  });

  it('adds a bound per image and for the hidden tool-use prompt', () => {
    const text = [{ role: 'user' as const, content: [{ type: 'text', text: 'look' }] }];
    const withImage = [{ role: 'user' as const, content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }];
    expect(worstCaseInputTokens(request(withImage)) - worstCaseInputTokens(request(text))).toBe(1_600);
    const tools = [{ type: 'function', function: { name: 'f' } }];
    expect(worstCaseInputTokens(request(text, { tools })) - worstCaseInputTokens(request(text))).toBeGreaterThan(1_000);
  });

  it("takes max_completion_tokens, then max_tokens, then the model's output cap", () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    expect(worstCaseOutputTokens(request(messages, { max_completion_tokens: 10, max_tokens: 20 }), 'openai')).toBe(10);
    expect(worstCaseOutputTokens(request(messages, { max_tokens: 20 }), 'openai')).toBe(20);
    expect(worstCaseOutputTokens(request(messages), 'openai')).toBe(16_384);
    expect(worstCaseOutputTokens(request(messages, { model: 'unknown-model' }), 'openai')).toBe(4_096);
  });
});
