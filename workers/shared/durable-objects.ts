/**
 * What the API and the gateway call on the metrics worker's Durable Objects (bound by `script_name`).
 * The objects implement these; shared code knows only the contract, never the worker.
 */

export interface WindowDecision {
  allowed: boolean;
  remaining: number;
  /** Epoch milliseconds at which the current window ends. */
  resetAtMs: number;
}

export interface RequestSample {
  service: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  rateLimited: boolean;
}

export interface RateLimiterObject extends Rpc.DurableObjectBranded {
  hit(limit: number, windowMs: number): Promise<WindowDecision>;
}

export interface MetricsObject extends Rpc.DurableObjectBranded {
  record(samples: RequestSample[]): Promise<void>;
  render(service?: string): Promise<string>;
}
