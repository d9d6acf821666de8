/** The gateway's request body: an OpenAI chat request plus Faucet's `feature` and `route_mode`. */
import { z } from 'zod';
import { routeModeSchema } from '#shared/wire/route-modes.ts';
import { chatRequestSchema } from '../openai/chat-schemas.ts';

export const chatCompletionsBodySchema = chatRequestSchema.extend({
  model: z
    .string()
    .max(256)
    .regex(
      /^([a-z0-9][a-z0-9_-]*:)?[^\s:][^\s]*$/,
      'must be "provider:model" (e.g. "openai:gpt-4o-mini") or a bare model name with a default provider (e.g. "gpt-4o-mini")',
    ),
  /** Absent: the app's default feature, so an unmodified OpenAI client works. */
  feature: z.string().min(1).max(128).optional(),
  route_mode: routeModeSchema.optional(),
});

export type ChatCompletionsBody = z.infer<typeof chatCompletionsBodySchema>;
