/** The `faucet` object every completion (and the stream's last event) carries: what was routed and charged. */
import { formatUsd, type Usd } from '../../../shared/money/index.ts';
import type { RouteMode } from '../../../shared/rating/index.ts';

export interface FaucetObject {
  request_id: string;
  route_mode: RouteMode;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
  charge: { currency: 'USD'; amount_usd: string; upstream_cost_usd: string };
}

export function faucetObject(fields: {
  requestId: string;
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
    route_mode: fields.routeMode,
    provider: fields.provider,
    model: fields.model,
    input_tokens: fields.inputTokens,
    output_tokens: fields.outputTokens,
    estimated: fields.estimated,
    charge: { currency: 'USD', amount_usd: formatUsd(fields.retailUsd), upstream_cost_usd: formatUsd(fields.upstreamCostUsd) },
  };
}
