/**
 * Wire shapes of the request log the Calls view reads (`GET /v1/developer/calls`, `/calls/{id}`,
 * `/calls/stats`; the API's OpenAPI is the source), and the filters as the list endpoint takes them.
 */
export interface CallSummary {
  id: string;
  request_id: string;
  created_at: string;
  app: string;
  feature: string;
  user_ref: string;
  surface: string;
  requested_model: string;
  provider: string | null;
  model: string | null;
  route_mode: string | null;
  outcome: 'answered' | 'cut' | 'upstream_error' | 'refused';
  error_code: string | null;
  stream: boolean;
  estimated: boolean | null;
  input_tokens: number | null;
  output_tokens: number | null;
  charge_usd: string | null;
  total_ms: number | null;
}

export interface CallAttempt {
  model: string;
  provider: string;
  outcome: string;
  status?: number;
  error_code?: string;
}

export interface CallDetail extends CallSummary {
  error_message: string | null;
  timings: { authorize_ms: number | null; first_byte_ms: number | null; total_ms: number | null };
  attempts: CallAttempt[] | null;
  masked_key: string | null;
  tokens: {
    input: number;
    cached_input: number;
    cache_write: number;
    audio_input: number;
    output: number;
    reasoning: number;
    audio_output: number;
  } | null;
  money: {
    currency: 'USD';
    retail_usd: string;
    upstream_cost_usd: string;
    developer_revenue_usd: string;
    platform_share_usd: string;
    receivable_usd: string;
  } | null;
}

export interface CallStatsDay {
  day: string;
  calls: number;
  errors: number;
  upstream_errors: number;
  refused: number;
  cut: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface CallStats {
  from: string;
  to: string;
  tz: string;
  data: CallStatsDay[];
}

/** The list's filters by their query names; the time range as ISO instants. */
export const filterNames = [
  'app',
  'feature',
  'user_ref',
  'model',
  'provider',
  'route',
  'outcome',
  'surface',
  'from',
  'to',
  'request_id',
] as const;
export type CallFilters = Partial<Record<(typeof filterNames)[number], string>>;

/** Filters from a query (the End users row's link: `?user_ref=…`), unknown names dropped. */
export function filtersFrom(query: URLSearchParams): CallFilters {
  const filters: CallFilters = {};
  for (const name of filterNames) {
    const value = query.get(name)?.trim();
    if (value) filters[name] = value;
  }
  return filters;
}

/** A `datetime-local` value (the browser's time) as an ISO instant; '' stays absent. */
export function instantOf(local: string): string | undefined {
  if (!local) return undefined;
  const time = new Date(local);
  return Number.isFinite(time.getTime()) ? time.toISOString() : local;
}

/** An ISO instant as a `datetime-local` value in the browser's time (the form shows what is applied). */
export function localOf(instant: string | undefined): string {
  if (!instant) return '';
  const time = new Date(instant);
  if (!Number.isFinite(time.getTime())) return '';
  const local = new Date(time.getTime() - time.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}
