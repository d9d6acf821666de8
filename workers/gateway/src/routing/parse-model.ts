import { FaucetError } from '#shared/wire/errors.ts';
import { isProviderName, providerCatalog, type ProviderEntry, type ProviderName } from '#shared/providers/provider-catalog.ts';

export interface ModelReference {
  provider: ProviderName;
  /** The provider's own model id (what goes upstream). */
  model: string;
  entry: ProviderEntry;
}

/** `"openai:gpt-4o-mini"` → provider `openai`, model `gpt-4o-mini`; the model id may itself contain colons. */
export function parseModel(qualified: string): ModelReference {
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
