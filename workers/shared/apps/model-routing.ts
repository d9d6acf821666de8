/**
 * A feature's model aliases and fallback models (docs/models.md, "Fallback and aliases"), as a
 * developer gives them. An alias name is lowercase letters and underscores (`fast`, `smart_v`):
 * never a `provider:model` name (no colon) and never a bare catalog name (those carry a digit or a
 * hyphen; a bare model id of the catalog that happens to fit, e.g. `echo`, is refused as an alias).
 * Each target, and each fallback, is a priced `provider:model` of the catalog and, when the feature
 * lists allowed models, one of them (checked on the merged row by create and update).
 */
import { isProviderName, providerCatalog } from '../providers/provider-catalog.ts';
import { currentPriceCatalog, findModelPrice } from '../rating/index.ts';
import { FaucetError } from '../wire/errors.ts';
import { knownModel } from './model-names.ts';

export const ALIAS_NAME_PATTERN = /^[a-z][a-z_]{0,23}$/;
export const routingBounds = { aliases: 10, fallbacks: 3 } as const;

/** Whether `name` fits the alias pattern and is no bare model id of the catalog (so it can only be an alias). */
export function isAliasName(name: string): boolean {
  if (!ALIAS_NAME_PATTERN.test(name)) return false;
  return !Object.keys(providerCatalog).some((provider) => isProviderName(provider) && findModelPrice(currentPriceCatalog, provider, name));
}

export function parseModelAliases(value: Record<string, string>): Record<string, string> {
  const entries = Object.entries(value);
  if (entries.length > routingBounds.aliases) {
    throw new FaucetError('invalid_request', `model_aliases takes at most ${routingBounds.aliases} aliases`);
  }
  const aliases: Record<string, string> = {};
  for (const [name, target] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!isAliasName(name)) {
      throw new FaucetError(
        'invalid_request',
        `model_aliases: ${JSON.stringify(name.slice(0, 40))} is not an alias name: 1-24 of a-z and _, starting with a letter, and not a model id of the catalog`,
      );
    }
    aliases[name] = knownModel(target, `model_aliases.${name}`);
  }
  return aliases;
}

export function parseFallbackModels(values: string[]): string[] {
  if (values.length > routingBounds.fallbacks) {
    throw new FaucetError('invalid_request', `fallback_models takes at most ${routingBounds.fallbacks} models`);
  }
  const models = values.map((value) => knownModel(value, 'fallback_models'));
  if (new Set(models).size !== models.length) throw new FaucetError('invalid_request', 'fallback_models: a model is listed twice');
  return models;
}

/** The rule create and update keep on the merged row: every alias target and fallback among allowed_models (when not empty). */
export const routingModelsRule = 'model_aliases targets and fallback_models must be among allowed_models when allowed_models is not empty';

export function routingModelsAllowed(allowedModels: string[], aliases: Record<string, string>, fallbacks: string[]): boolean {
  if (allowedModels.length === 0) return true;
  return [...Object.values(aliases), ...fallbacks].every((model) => allowedModels.includes(model));
}
