import { describe, expect, it } from 'vitest';
import { surfacesOf } from './model-surfaces.ts';

const chat = ['chat.completions', 'responses', 'messages'];

describe('surfacesOf', () => {
  it.each([
    ['openai', 'gpt-4o-mini', chat],
    ['anthropic', 'claude-haiku-4-5', chat],
    ['openrouter', 'anthropic/claude-sonnet-4.5', chat],
    ['openai', 'text-embedding-3-small', ['embeddings']],
    ['google', 'gemini-embedding-001', ['embeddings']],
    ['together', 'BAAI/bge-large-en-v1.5', ['embeddings']],
    ['mock', 'echo', [...chat, 'embeddings']],
    // An embedding model of a provider whose embeddings Faucet does not call: no surface serves it.
    ['openrouter', 'openai/text-embedding-3-small', []],
    ['nowhere', 'gpt-4o-mini', []],
  ])('%s:%s is served by %j', (provider, model, surfaces) => {
    expect(surfacesOf(provider, model)).toEqual(surfaces);
  });
});
