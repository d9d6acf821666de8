/**
 * The local usage report (SDK → bridge → control API `POST /v1/usage/local`), defined once for the
 * bridge and the API. Strict: any field not listed is refused, so nothing that could carry prompt
 * or completion text (`prompt`, `messages`, `content`, …) ever reaches the outbox or the server.
 */
import { z } from 'zod';

const safeKey = /^[A-Za-z0-9._:-]+$/;
const maxTokens = 2_147_483_647;

export const usageReportSchema = z.strictObject({
  request_id: z.string().min(1).max(128).regex(safeKey, 'must be 1–128 of A-Z a-z 0-9 . _ : -'),
  public_app_id: z.string().min(1).max(128),
  /** The session's `user_ref` (from `POST /v1/sessions`); the API refuses any other value with 403. */
  user_id_hash: z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (the session's user_ref)"),
  feature: z.string().min(1).max(128).regex(safeKey).optional(),
  route_mode: z.literal('local'),
  provider: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9._-]+$/),
  model: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters'),
  input_tokens: z.int().min(0).max(maxTokens),
  output_tokens: z.int().min(0).max(maxTokens),
  estimated: z.boolean(),
  occurred_at: z.iso.datetime({ offset: true }),
});

export type UsageReport = z.infer<typeof usageReportSchema>;
