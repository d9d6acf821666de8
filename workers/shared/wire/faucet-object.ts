/**
 * The `faucet` object every completion (and a stream's last event) carries: what was routed and
 * charged. One schema: the gateway builds it, its OpenAPI document shows it, and the SDK's copy of
 * the type is pinned to it by a contract test.
 */
import { z } from '@hono/zod-openapi';
import { routeModeSchema } from './route-modes.ts';

/** One upstream attempt of a call (docs/models.md, "Fallback and aliases"); never a key. */
export const callAttemptSchema = z
  .object({
    model: z.string(),
    provider: z.string(),
    outcome: z.enum(['ok', 'error', 'skipped_circuit_open', 'skipped_no_route']).openapi({
      description:
        "ok: it answered (the one booked); error: it failed before its first byte; skipped_circuit_open: its provider failed repeatedly and is paused; skipped_no_route: no key on the call's route, or its worst case is not covered by the hold",
    }),
    status: z.number().int().optional().openapi({ description: "The upstream's HTTP status, when it answered with one" }),
    error_code: z.string().optional().openapi({ description: 'The error code the failure maps to (DESIGN §4)' }),
  })
  .openapi('FaucetCallAttempt');

export type CallAttempt = z.infer<typeof callAttemptSchema>;

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
    cut_reason: z
      .enum(['insufficient_balance', 'spend_limit_month', 'spend_limit_day', 'budget_exceeded', 'quota_unavailable'])
      .optional()
      .openapi({
        description:
          'Set when the answer was ended because its next quota step was refused (docs/quota.md): the balance, a spend limit or the developer key\'s budget ran out, or no step could be had. The answer ends as at its max tokens (`finish_reason: "length"`); an app may offer a top-up',
      }),
    attempts: z.array(callAttemptSchema).optional().openapi({
      description: 'What the gateway tried, in order, when the feature has fallbacks or an attempt failed; the last `ok` one answered',
    }),
  })
  .openapi('FaucetCallMetadata');

export type FaucetObject = z.infer<typeof faucetObjectSchema>;
