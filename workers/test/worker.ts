// Test-only worker (wrangler.toml [env.test]): hosts the Durable Objects so tests can bind them
// locally; its default export is the control API. Tests call each app through `workers/test/harness.ts`.
export { MetricsAggregator, RateLimiter } from '../metrics/src/index.ts';
export { WalletObject } from '../gateway/src/wallet/wallet-object.ts';
export { default } from '../api/src/index.ts';
