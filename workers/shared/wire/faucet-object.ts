/**
 * The `faucet` object every completion (and a stream's last event) carries: what was routed and
 * charged. One schema: the gateway builds it, its OpenAPI document shows it, and the SDK's copy of
 * the type is pinned to it by a contract test.
 */
import { z } from '@hono/zod-openapi';
import { routeModeSchema } from './route-modes.ts';

export const faucetObjectSchema = z
  .object({
    request_id: z.string(),
    feature: z.string().optional().openapi({ description: "The app's feature the call used: the one it named, or the app's default" }),
    route_mode: routeModeSchema,
    provider: z.string(),
    model: z.string(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    estimated: z.boolean(),
    charge: z.object({ currency: z.literal('USD'), amount_usd: z.string(), upstream_cost_usd: z.string() }),
  })
  .openapi('FaucetCallMetadata');

export type FaucetObject = z.infer<typeof faucetObjectSchema>;
