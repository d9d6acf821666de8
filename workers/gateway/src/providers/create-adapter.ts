import { createAnthropicAdapter } from './anthropic/anthropic-adapter.ts';
import { createMockAdapter } from './mock/mock-adapter.ts';
import { createOpenAiCompatibleAdapter } from './openai-compatible/openai-compatible-adapter.ts';
import type { ProviderProtocol } from '#shared/providers/provider-catalog.ts';
import type { ProviderAdapter, ProviderContext } from './provider.ts';

const factories: Record<ProviderProtocol, (context: ProviderContext) => ProviderAdapter> = {
  openai_compatible: createOpenAiCompatibleAdapter,
  anthropic: createAnthropicAdapter,
  mock: createMockAdapter,
};

export function createAdapter(protocol: ProviderProtocol, context: ProviderContext): ProviderAdapter {
  return factories[protocol](context);
}
