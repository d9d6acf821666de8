export { createFaucetProvider, faucetMetadata, type FaucetAiProvider, type FaucetProviderSettings } from './faucet-provider.ts';
