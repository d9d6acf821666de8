import { createFaucet, type FaucetOptions } from '../src/index.ts';

/** A client against one fake server that serves both the control API and the gateway. */
export function clientFor(url: string, options: Partial<FaucetOptions> = {}) {
  return createFaucet({ publicAppId: 'app_fake_demo', user: { id: 'user-42@example.com' }, baseUrl: url, ...options });
}
