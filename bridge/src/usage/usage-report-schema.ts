import type { z } from 'zod';

/** The report's schema is the wire contract's (workers/shared/wire/usage-report.ts), shared with the control API. */
export { usageReportSchema, type UsageReport } from '../../../workers/shared/wire/usage-report';

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
