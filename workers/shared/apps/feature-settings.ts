/**
 * A feature's settings as a developer gives them, checked once for the API and the seed: models known
 * to the catalog (deduplicated), a route policy, prices as 8-digit decimal strings parsed by the
 * money module (zero allowed, bounded so a hold can never overflow), an output cap. Fields not given
 * stay `undefined`: create fills defaults, update keeps the current value.
 */
import { z } from 'zod';
import { compareUsd, formatUsd, parseWireAmount } from '../money/index.ts';
import { FaucetError } from '../wire/errors.ts';
import { knownModel } from './model-names.ts';
import { parseFallbackModels, parseModelAliases } from './model-routing.ts';
import { displayName } from './names.ts';

export const routePolicies = ['platform_first', 'byok_first'] as const;
export type RoutePolicy = (typeof routePolicies)[number];
export const routePolicySchema = z.enum(routePolicies);

export const featureBounds = {
  allowedModels: 50,
  maxOutputTokens: 1_000_000,
} as const;

/** Upper bounds of the prices (well above any model's list price), so a hold can never overflow numeric(20,8). */
const maxAmounts = { developer_price_per_mtok_usd: '10000.00000000', open_fee_usd: '100.00000000' } as const;

export interface FeatureSettingsInput {
  name?: string;
  default_model?: string;
  allowed_models?: string[];
  route_policy?: RoutePolicy;
  developer_price_per_mtok_usd?: string | null;
  open_fee_usd?: string;
  max_output_tokens?: number | null;
  model_aliases?: Record<string, string>;
  fallback_models?: string[];
}

export interface FeatureSettings {
  name: string | undefined;
  defaultModel: string | undefined;
  allowedModels: string[] | undefined;
  routePolicy: RoutePolicy | undefined;
  developerPricePerMtokUsd: string | null | undefined;
  openFeeUsd: string | undefined;
  maxOutputTokens: number | null | undefined;
  modelAliases: Record<string, string> | undefined;
  fallbackModels: string[] | undefined;
}

function amount(value: string, field: keyof typeof maxAmounts): string {
  const parsed = parseWireAmount(value, { field });
  if (compareUsd(parsed, parseWireAmount(maxAmounts[field])) > 0) {
    throw new FaucetError('invalid_request', `${field} must be at most ${maxAmounts[field]}`);
  }
  return formatUsd(parsed);
}

function models(values: string[]): string[] {
  if (values.length > featureBounds.allowedModels) {
    throw new FaucetError('invalid_request', `allowed_models takes at most ${featureBounds.allowedModels} models`);
  }
  return [...new Set(values.map((value) => knownModel(value, 'allowed_models')))];
}

function outputCap(value: number): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > featureBounds.maxOutputTokens) {
    throw new FaucetError('invalid_request', `max_output_tokens must be a whole number from 1 to ${featureBounds.maxOutputTokens}`);
  }
  return value;
}

export function parseFeatureSettings(input: FeatureSettingsInput): FeatureSettings {
  if (input.route_policy !== undefined && !routePolicies.includes(input.route_policy)) {
    throw new FaucetError('invalid_request', `route_policy must be one of ${routePolicies.join(', ')}`);
  }
  const price = input.developer_price_per_mtok_usd;
  const cap = input.max_output_tokens;
  return {
    name: input.name === undefined ? undefined : displayName(input.name),
    defaultModel: input.default_model === undefined ? undefined : knownModel(input.default_model, 'default_model'),
    allowedModels: input.allowed_models === undefined ? undefined : models(input.allowed_models),
    routePolicy: input.route_policy,
    developerPricePerMtokUsd: price === undefined || price === null ? price : amount(price, 'developer_price_per_mtok_usd'),
    openFeeUsd: input.open_fee_usd === undefined ? undefined : amount(input.open_fee_usd, 'open_fee_usd'),
    maxOutputTokens: cap === undefined || cap === null ? cap : outputCap(cap),
    modelAliases: input.model_aliases === undefined ? undefined : parseModelAliases(input.model_aliases),
    fallbackModels: input.fallback_models === undefined ? undefined : parseFallbackModels(input.fallback_models),
  };
}

/** The rule create and update both keep (update checks it on the merged row, in its statement). */
export const defaultModelRule = 'default_model must be one of allowed_models when allowed_models is not empty';
