/** Wire schemas shared by the developer and admin routes of docs/developers.md. */
import { z } from '@hono/zod-openapi';

export const DeveloperSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    email: z.string(),
    payout_details_ref: z.string().nullable(),
    suspended: z.boolean(),
    suspended_at: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi('Developer');

export const DeveloperKeySchema = z
  .object({
    id: z.uuid(),
    prefix: z.string().openapi({ description: 'The first characters of the key, to tell keys apart' }),
    label: z.string().nullable(),
    created_at: z.string(),
    last_used_at: z.string().nullable().openapi({ description: 'Updated at most once a minute' }),
    revoked_at: z.string().nullable(),
  })
  .openapi('DeveloperKey');

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional().openapi({ description: 'Rows per page (default 20)' }),
  cursor: z.string().max(64).optional().openapi({ description: 'next_cursor of the previous page' }),
});

export const AuditLogEntrySchema = z
  .object({
    id: z.string(),
    actor_type: z.string(),
    actor_id: z.string().nullable(),
    action: z.string(),
    target_type: z.string(),
    target_id: z.string(),
    request_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).openapi({ description: 'before/after of the change and its context' }),
    created_at: z.string(),
  })
  .openapi('AuditLogEntry');
