/** Prometheus text exposition (version 0.0.4) of Faucet's HTTP counters. */
import type { RequestSample } from '#shared/durable-objects.ts';

export type { RequestSample };

export interface CounterSeries {
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
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

export function renderPrometheus(families: MetricFamily[]): string {
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
