import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { defaultProvider } from './default-provider.ts';
import { parseModel } from './parse-model.ts';

describe('defaultProvider: the explicit table for bare names', () => {
  it.each([
    ['gpt-4o-mini', 'openai'],
    ['gpt-5', 'openai'],
    ['chatgpt-4o-latest', 'openai'],
    ['o1', 'openai'],
    ['o3-mini', 'openai'],
    ['o4-mini', 'openai'],
    ['claude-sonnet-4-5', 'anthropic'],
    ['gemini-2.5-flash', 'google'],
    ['mistral-large-latest', 'mistral'],
    ['codestral-latest', 'mistral'],
    ['deepseek-chat', 'deepseek'],
    ['grok-4', 'xai'],
    ['echo', 'mock'],
  ])('%s → %s', (model, provider) => {
    expect(defaultProvider(model)).toBe(provider);
  });

  it.each(['llama-3-70b', 'omni', 'o', 'o3x', 'echo2', 'GPT-4o', 'my-gpt-4o'])('%s has none', (model) => {
    expect(defaultProvider(model)).toBeUndefined();
  });
});

describe('parseModel', () => {
  it('keeps provider:model as it is, model ids with colons included', () => {
    expect(parseModel('openai:ft:gpt-4o-mini:acme::abc123')).toMatchObject({ provider: 'openai', model: 'ft:gpt-4o-mini:acme::abc123' });
  });

  it('qualifies a bare name with its default provider', () => {
    expect(parseModel('gpt-4o-mini')).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(parseModel('claude-haiku-4-5')).toMatchObject({ provider: 'anthropic', model: 'claude-haiku-4-5' });
  });

  it('refuses a bare name without a default provider, and an unknown provider, as invalid_request', () => {
    for (const name of ['llama-3-70b', 'nope:gpt-4o-mini', 'openai:']) {
      let thrown: unknown;
      try {
        parseModel(name);
      } catch (error) {
        thrown = error;
      }
      expect(FaucetError.isInstance(thrown) && thrown.code).toBe('invalid_request');
    }
  });
});
