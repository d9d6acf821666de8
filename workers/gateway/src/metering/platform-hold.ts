import type { Env } from '../../../shared/env.ts';
import type { Usd } from '../../../shared/money/index.ts';
import { RatingError, rateUsage, ratingSettingsFor } from '../../../shared/rating/index.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import type { ModelReference } from '../routing/parse-model.ts';
import { worstCaseInputTokens, worstCaseOutputTokens } from './worst-case-tokens.ts';

/** What the platform route holds: the retail price of the worst-case tokens; null when the model has no price. */
export function platformHoldAmount(env: Env, reference: ModelReference, request: ChatRequest): Usd | null {
  try {
    return rateUsage(
      {
        routeMode: 'platform',
        provider: reference.provider,
        model: reference.model,
        inputTokens: worstCaseInputTokens(request),
        outputTokens: worstCaseOutputTokens(request, reference.provider),
        estimated: true,
      },
      {},
      ratingSettingsFor(env, null),
    ).retailUsd;
  } catch (error) {
    if (error instanceof RatingError && error.reason === 'unknown_model') return null;
    throw error;
  }
}
