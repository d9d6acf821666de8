/**
 * The env file every worker of the local stack starts with. What the user wrote in `.dev.vars` wins
 * over the stack's defaults (README, "Environment variables"); only the wiring to the PostgreSQL this
 * stack started, migrated and seeded stays the stack's, and a value the user set for it is reported
 * as ignored rather than dropped in silence. A caller's explicit values (tests, benches) win over both.
 */
export interface WorkerEnvInput {
  /** `.dev.vars` as read: the generated secrets and whatever the user wrote. */
  devVars: Record<string, string>;
  stack: {
    databaseUrl: string;
    /** `host:port` of the WebSocket proxy in front of the stack's PostgreSQL. */
    wsProxy: string;
    apiUrl: string;
    gatewayUrl: string;
    /** Where the API reaches the fake Stripe API, when the stack runs one. */
    stripeTarget?: Record<string, string>;
  };
  sessionTtlSeconds?: number;
  workerVars?: Record<string, string>;
}

/** The stack's own database: pointing the workers elsewhere would leave them on an unmigrated, unseeded database. */
const stackWiring = ['DATABASE_URL', 'DATABASE_WS_PROXY'] as const;

export function workerEnv(input: WorkerEnvInput): { env: Record<string, string>; ignored: string[] } {
  const { DEMO_DEVELOPER_KEY: _notAWorkerSecret, ...written } = input.devVars;
  const defaults = {
    ENVIRONMENT: 'development',
    API_BASE_URL: input.stack.apiUrl,
    GATEWAY_BASE_URL: input.stack.gatewayUrl,
    SESSION_TTL_SECONDS: '900',
    ...input.stack.stripeTarget,
  };
  const wiring: Record<(typeof stackWiring)[number], string> = {
    DATABASE_URL: input.stack.databaseUrl,
    DATABASE_WS_PROXY: input.stack.wsProxy,
  };
  return {
    env: {
      ...defaults,
      ...written,
      ...wiring,
      ...(input.sessionTtlSeconds === undefined ? {} : { SESSION_TTL_SECONDS: String(input.sessionTtlSeconds) }),
      ...input.workerVars,
    },
    ignored: stackWiring.filter((key) => key in written && written[key] !== wiring[key]),
  };
}
