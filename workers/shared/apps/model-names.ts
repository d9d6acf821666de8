/**
 * Which models a feature may name: `provider:model` of a known provider with a price in the current
 * catalog (the names `GET /v1/models` lists). A model the catalog cannot price could never be rated on
 * the platform or developer_key route, so a feature naming one is refused up front (400).
 */
import { isProviderName } from '../providers/provider-catalog.ts';
import { currentPriceCatalog, findModelPrice } from '../rating/index.ts';
import { FaucetError } from '../wire/errors.ts';

export function knownModel(value: string, field: string): string {
  const colon = value.indexOf(':');
  const provider = value.slice(0, colon);
  const model = value.slice(colon + 1);
  if (colon <= 0 || model === '' || !isProviderName(provider) || !findModelPrice(currentPriceCatalog, provider, model)) {
    const shown = JSON.stringify(value.slice(0, 100));
    throw new FaucetError('invalid_request', `${field}: ${shown} is not a known model; use a "provider:model" name of GET /v1/models`);
  }
  return value;
}
