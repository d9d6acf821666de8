/** Builds the `faucet` object (its schema: workers/shared/wire/faucet-object.ts). */
import { formatUsd, type Usd } from '#shared/money/index.ts';
import type { FaucetObject } from '#shared/wire/faucet-object.ts';
import type { RouteMode } from '#shared/wire/route-modes.ts';

export type { FaucetObject };

export function faucetObject(fields: {
  requestId: string;
  feature: string;
  routeMode: RouteMode;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  estimated: boolean;
  retailUsd: Usd;
  upstreamCostUsd: Usd;
}): FaucetObject {
  return {
    request_id: fields.requestId,
    feature: fields.feature,
    route_mode: fields.routeMode,
    provider: fields.provider,
    model: fields.model,
    input_tokens: fields.inputTokens,
    output_tokens: fields.outputTokens,
    estimated: fields.estimated,
    charge: { currency: 'USD', amount_usd: formatUsd(fields.retailUsd), upstream_cost_usd: formatUsd(fields.upstreamCostUsd) },
  };
}
