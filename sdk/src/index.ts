export { createFaucet, type FaucetClient, type FaucetOptions, type FeatureOptions } from './create-faucet.ts';
export type { DeviceIdStorage } from './device-id.ts';
export { FaucetError, type FaucetErrorCode } from './errors.ts';
export type { RetryOptions } from './http/retry-policy.ts';
export type { RetryEvent } from './http/transport.ts';
export type * from './types.ts';
