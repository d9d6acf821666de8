import { z } from '@hono/zod-openapi';
import { databaseRetryAfterSeconds } from './database-unreachable.ts';
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

type ErrorResponse = {
  description: string;
  headers?: Record<string, { description: string; schema: { type: 'integer' } }>;
  content: { 'application/json': { schema: typeof ErrorEnvelopeSchema } };
};

const envelope = { 'application/json': { schema: ErrorEnvelopeSchema } };

/**
 * OpenAPI response entries for the given error statuses, all in the DESIGN §4 envelope, and 503
 * `unavailable` on every route: each route declared with them reads Postgres, and answers 503 with
 * `retry-after` while it cannot be reached.
 */
export function errorResponses<S extends number>(...statuses: S[]): Record<S | 503, ErrorResponse> {
  return {
    ...Object.fromEntries(statuses.map((status) => [status, { description: 'Error', content: envelope }])),
    503: {
      description: '`unavailable`: the database is unreachable; nothing to fix in the request, retry after `retry-after` seconds',
      headers: {
        'retry-after': { description: `Seconds to wait before retrying (${databaseRetryAfterSeconds})`, schema: { type: 'integer' } },
      },
      content: envelope,
    },
  } as Record<S | 503, ErrorResponse>;
}
