import { z } from '@hono/zod-openapi';
import { errorStatus } from './wire/errors.ts';

export const ErrorEnvelopeSchema = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(errorStatus) as [keyof typeof errorStatus, ...(keyof typeof errorStatus)[]]),
      message: z.string(),
      request_id: z.string(),
    }),
  })
  .openapi('Error');

/** OpenAPI response entries for the given error statuses, all in the DESIGN §4 envelope. */
export function errorResponses<S extends number>(...statuses: S[]) {
  return Object.fromEntries(
    statuses.map((status) => [status, { description: 'Error', content: { 'application/json': { schema: ErrorEnvelopeSchema } } }]),
  ) as Record<S, { description: string; content: { 'application/json': { schema: typeof ErrorEnvelopeSchema } } }>;
}
