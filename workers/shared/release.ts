/**
 * The release line (README, docs/operations.md): the one place each worker's version is set. Billing
 * and settlement (the control API, the gateway) at 0.7.0; operations (the metrics worker, the console)
 * at 0.6.0. The SDK and the bridge carry theirs in their package.json. All source-beta, pre-1.0.
 */
export const workerVersions = {
  api: '0.7.0',
  gateway: '0.7.0',
  metrics: '0.6.0',
  console: '0.6.0',
} as const;
