declare module 'parse-prometheus-text-format' {
  export interface PrometheusMetric {
    labels?: Record<string, string>;
    value?: string;
  }
  export interface PrometheusFamily {
    name: string;
    help: string;
    type: string;
    metrics: PrometheusMetric[];
  }
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[];
}
