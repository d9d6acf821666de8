import { z } from 'zod';

/**
 * The local usage report (SDK → bridge → control API `POST /v1/usage/local`). Strict: any field
 * not listed here is refused, so nothing that could carry prompt or completion text
 * (`prompt`, `messages`, `content`, `input`, `output`, `text`, …) ever gets into the outbox.
 * The rules match the control API's (workers/api/src/routes/usage-local.ts), so a report the API
 * would refuse is refused here at once instead of being dead-lettered later.
 */
const safeKey = /^[A-Za-z0-9._:-]+$/;
const maxTokens = 2_147_483_647;

export const usageReportSchema = z.strictObject({
  request_id: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/),
  public_app_id: z.string().min(1).max(128),
  user_id_hash: z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (the session's user_ref)"),
  feature: z.string().min(1).max(128).regex(safeKey).optional(),
  route_mode: z.literal('local'),
  provider: z.string().min(1).max(64).regex(/^[A-Za-z0-9._-]+$/),
  model: z.string().min(1).max(256).regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters'),
  input_tokens: z.int().min(0).max(maxTokens),
  output_tokens: z.int().min(0).max(maxTokens),
  estimated: z.boolean(),
  occurred_at: z.iso.datetime({ offset: true }),
});

export type UsageReport = z.infer<typeof usageReportSchema>;

/** Field names and rules only: a refused value is never echoed back. */
export function describeReportIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        return `unknown field(s) ${issue.keys.join(', ')} refused: usage reports never carry prompt or completion content`;
      }
      const path = issue.path.join('.') || 'body';
      return `${path}: ${issue.code === 'invalid_type' ? `expected ${issue.expected}` : issue.message}`;
    })
    .join('; ');
}
