import { FaucetError } from '#shared/wire/errors.ts';
import { defaultProvider } from './default-provider.ts';
import { isProviderName, providerCatalog, type ProviderEntry, type ProviderName } from '#shared/providers/provider-catalog.ts';

export interface ModelReference {
  provider: ProviderName;
  /** The provider's own model id (what goes upstream). */
  model: string;
  entry: ProviderEntry;
}

/**
 * `"openai:gpt-4o-mini"` → provider `openai`, model `gpt-4o-mini`; the model id may itself contain
 * colons. A bare name (no colon) resolves to its default provider (default-provider.ts).
 */
export function parseModel(name: string): ModelReference {
  const qualified = name.includes(':') ? name : qualifyBareName(name);
  const colon = qualified.indexOf(':');
  const provider = qualified.slice(0, colon);
  const model = qualified.slice(colon + 1);
  if (colon <= 0 || model === '') throw new FaucetError('invalid_request', 'model must be "provider:model", e.g. "mock:echo".');
  if (!isProviderName(provider)) {
    throw new FaucetError(
      'invalid_request',
      `Unknown provider "${provider}"; known providers: ${Object.keys(providerCatalog).join(', ')}.`,
    );
  }
  return { provider, model, entry: providerCatalog[provider] };
}

function qualifyBareName(model: string): string {
  const provider = defaultProvider(model);
  if (provider === undefined || !isProviderName(provider)) {
    throw new FaucetError(
      'invalid_request',
      `model "${model}" names no provider and has no default one: use "provider:model", e.g. "openai:gpt-4o-mini" (GET /v1/models lists them).`,
    );
  }
  return `${provider}:${model}`;
}
