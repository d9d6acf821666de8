/** The optional `from` (inclusive) / `to` (exclusive) filter of the CSV reports. */
import { z } from '@hono/zod-openapi';
import { FaucetError } from '#shared/wire/errors.ts';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

export const ReportRangeQuery = z.object({
  from: z.string().max(40).optional().describe('Inclusive lower bound: YYYY-MM-DD (UTC) or an ISO-8601 date-time with offset'),
  to: z.string().max(40).optional().describe('Exclusive upper bound, same formats'),
});

export interface ReportRange {
  /** ISO-8601 instants (UTC); null = unbounded. */
  from: string | null;
  to: string | null;
}

/** What a report covers: the range, and whose rows (every report filters on it; no default). */
export interface ReportScope extends ReportRange {
  /** Only this developer's rows (their apps' usage, their payouts); null = every developer's (admin). */
  developerId: string | null;
}

function parseBound(name: string, value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  const text = DATE.test(value) ? `${value}T00:00:00Z` : value;
  const time = DATE.test(value) || DATE_TIME.test(value) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(time) || (DATE.test(value) && new Date(time).toISOString().slice(0, 10) !== value)) {
    throw new FaucetError('invalid_request', `${name} must be YYYY-MM-DD or an ISO-8601 date-time with a time zone`);
  }
  return new Date(time).toISOString();
}

export function parseReportRange(query: { from?: string | undefined; to?: string | undefined }): ReportRange {
  const from = parseBound('from', query.from);
  const to = parseBound('to', query.to);
  if (from && to && from >= to) throw new FaucetError('invalid_request', 'from must be before to');
  return { from, to };
}
