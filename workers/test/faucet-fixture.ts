/**
 * A `faucet` object as the gateway answers it, for the Node tests of what carries one (surfaces,
 * streams, relays): the provider's model and token counts named by the test, the rest fixed.
 */
import type { FaucetObject } from '../gateway/src/metering/faucet-object.ts';

export function faucetFixture(
  fields: Pick<FaucetObject, 'provider' | 'model' | 'input_tokens' | 'output_tokens'> & Partial<FaucetObject>,
): FaucetObject {
  return {
    request_id: 'req_1',
    route_mode: 'platform',
    estimated: false,
    charge: { currency: 'USD', amount_usd: '0.00001500', upstream_cost_usd: '0.00001250' },
    ...fields,
  };
}
