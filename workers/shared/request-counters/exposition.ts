/**
 * Prometheus text exposition (version 0.0.4) of Faucet's HTTP counters: the series of every shard,
 * summed per label set, rendered as the three counter families `/metrics` has always served.
 */
import type { SeriesCounts } from '../durable-objects.ts';

interface CounterSeries {
  labels: Record<string, string>;
  value: number;
}

interface MetricFamily {
  name: string;
  help: string;
  series: CounterSeries[];
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function formatValue(value: number): string {
  // Durations in milliseconds (not money): three decimals are plenty.
  return String(Math.round(value * 1000) / 1000);
}

function renderFamilies(families: MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} counter`);
    for (const series of family.series) {
      const labels = Object.entries(series.labels)
        .map(([key, value]) => `${key}="${escapeLabel(value)}"`)
        .join(',');
      lines.push(`${family.name}{${labels}} ${formatValue(series.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Key of a series' label set: the same series from several shards is one line of the exposition. */
export function seriesKey(series: Pick<SeriesCounts, 'service' | 'method' | 'route' | 'status'>): string {
  return `${series.service}|${series.method}|${series.route}|${series.status}`;
}

/** Adds `from` into `into` (same label set). */
export function addCounts(into: SeriesCounts, from: Pick<SeriesCounts, 'requests' | 'durationMsSum' | 'rateLimited'>): void {
  into.requests += from.requests;
  into.durationMsSum += from.durationMsSum;
  into.rateLimited += from.rateLimited;
}

/** Sums series with the same label set (from several shards) and renders them. */
export function renderPrometheus(shards: SeriesCounts[][]): string {
  const merged = new Map<string, SeriesCounts>();
  for (const series of shards.flat()) {
    const key = seriesKey(series);
    const state = merged.get(key);
    if (state) addCounts(state, series);
    else merged.set(key, { ...series });
  }
  const states = [...merged.values()].sort((a, b) => seriesKey(a).localeCompare(seriesKey(b)));
  const labels = (state: SeriesCounts) => ({ service: state.service, method: state.method, route: state.route, status: state.status });
  const limitedByRoute = new Map<string, CounterSeries>();
  for (const state of states) {
    if (!state.rateLimited) continue;
    const key = `${state.service}|${state.method}|${state.route}`;
    const entry = limitedByRoute.get(key) ?? {
      labels: { service: state.service, method: state.method, route: state.route },
      value: 0,
    };
    entry.value += state.rateLimited;
    limitedByRoute.set(key, entry);
  }
  return renderFamilies([
    {
      name: 'service_http_requests_total',
      help: 'HTTP requests served, by service, method, route pattern and status.',
      series: states.map((state) => ({ labels: labels(state), value: state.requests })),
    },
    {
      name: 'service_http_request_duration_ms_sum',
      help: 'Sum of request durations in milliseconds, by service, method, route pattern and status.',
      series: states.map((state) => ({ labels: labels(state), value: state.durationMsSum })),
    },
    {
      name: 'service_rate_limited_total',
      help: 'Requests refused with 429 by the rate limiter, by service, method and route pattern.',
      series: [...limitedByRoute.values()],
    },
  ]);
}
