/** The adapter of a provider: one per protocol; OpenAI-compatible ones take their provider's dialect. */
import type { ProviderEntry, ProviderProtocol } from '#shared/providers/provider-catalog.ts';
import { createAnthropicAdapter } from './anthropic/anthropic-adapter.ts';
import { createGeminiAdapter } from './gemini/gemini-adapter.ts';
import { createMockAdapter } from './mock/mock-adapter.ts';
import { createOpenAiCompatibleAdapter } from './openai-compatible/openai-compatible-adapter.ts';
import type { ProviderAdapter, ProviderContext } from './provider.ts';

const factories: Record<ProviderProtocol, (context: ProviderContext, entry: ProviderEntry) => ProviderAdapter> = {
  openai_compatible: (context, entry) => createOpenAiCompatibleAdapter(context, entry.dialect),
  anthropic: createAnthropicAdapter,
  gemini: createGeminiAdapter,
  mock: createMockAdapter,
};

export function createAdapter(entry: ProviderEntry, context: ProviderContext): ProviderAdapter {
  return factories[entry.protocol](context, entry);
}
