/**
 * `@faucet/sdk/ai` embeddings against the real local stack: `embed` and `embedMany` from `ai` on the
 * provider's embedding model reach the gateway's `POST /v1/embeddings` with the end user's session,
 * on `mock:echo`, with the feature the provider or the call names; each call is booked and its
 * `faucet` object comes back as `providerMetadata.faucet`.
 */
import { embed, embedMany } from 'ai';
import { describe, expect, inject, it } from 'vitest';
import { usageRecord } from '../../../tests/e2e/funded-session.ts';
import type {} from '../../../tests/setup/node-stack.ts';
import { createFaucetProvider, faucetMetadata } from '../../ai/index.ts';
import { backendSession } from '../real-stack.ts';

const stack = inject('stack');

/** The provider for the demo user, and what it sent to the gateway's embeddings route. */
function embeddingsProvider(feature: string) {
  const sent: Array<{ authorization: string | null; body: Record<string, unknown> }> = [];
  const provider = createFaucetProvider({
    publicAppId: stack.publicAppId,
    user: { id: stack.demoExternalUserId },
    session: backendSession(stack, stack.demoExternalUserId),
    baseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    retry: { maxRetries: 0 },
    feature,
    fetch: async (input, init) => {
      if (String(input) === `${stack.gatewayUrl}/v1/embeddings`)
        sent.push({ authorization: new Headers(init?.headers).get('authorization'), body: JSON.parse(String(init?.body)) });
      return fetch(input, init);
    },
  });
  return { provider, sent };
}

/** The session token the provider sent (the usage receipts are the session user's). */
const tokenOf = (authorization: string | null | undefined) => (authorization ?? '').replace(/^Bearer /, '');

describe('@faucet/sdk/ai embeddings on the real gateway', () => {
  it('embeds one value with the session and the provider’s feature, booked, its faucet object as provider metadata', async () => {
    const { provider, sent } = embeddingsProvider(stack.featureKey);
    const result = await embed({ model: provider.embeddingModel('mock:echo'), value: 'sunny in Paris', dimensions: 16, maxRetries: 0 });

    expect(result.embedding).toHaveLength(16);
    expect(result.usage.tokens).toBeGreaterThan(0);
    expect(sent).toEqual([
      {
        authorization: expect.stringMatching(/^Bearer \S+$/),
        body: expect.objectContaining({ model: 'mock:echo', input: ['sunny in Paris'], dimensions: 16, feature: stack.featureKey }),
      },
    ]);
    const faucet = faucetMetadata(result.providerMetadata);
    expect(faucet).toMatchObject({
      feature: stack.featureKey,
      route_mode: 'platform',
      provider: 'mock',
      model: 'echo',
      input_tokens: result.usage.tokens,
      output_tokens: 0,
    });
    expect(Number(faucet?.charge?.amount_usd)).toBeGreaterThan(0);
    expect(await usageRecord(stack, tokenOf(sent[0]?.authorization), faucet?.request_id ?? '')).toMatchObject({
      model: 'echo',
      input_tokens: result.usage.tokens,
      charged_usd: faucet?.charge?.amount_usd,
    });
  });

  it('embeds many values in one call with the feature the call names (textEmbeddingModel, the older name)', async () => {
    const { provider, sent } = embeddingsProvider('no-such-feature');
    const result = await embedMany({
      model: provider.textEmbeddingModel('mock:echo'),
      values: ['one', 'two', 'three'],
      providerOptions: { faucet: { feature: stack.featureKey } },
      maxRetries: 0,
    });

    expect(result.embeddings).toHaveLength(3);
    expect(sent.map((request) => request.body)).toEqual([
      expect.objectContaining({ input: ['one', 'two', 'three'], feature: stack.featureKey }),
    ]);
    const faucet = faucetMetadata(result.providerMetadata);
    expect(faucet).toMatchObject({ feature: stack.featureKey, provider: 'mock', input_tokens: result.usage.tokens });
    expect(await usageRecord(stack, tokenOf(sent[0]?.authorization), faucet?.request_id ?? '')).toMatchObject({
      charged_usd: faucet?.charge?.amount_usd,
    });
  });
});
