/**
 * A feature price changed through the API applies to calls authorized after the change: a
 * developer_key call authorized before it books the old price even when it finishes after, the next
 * call books the new one, and each usage record's booking names the price it used.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayWith, newRequestId, settled, userMessage } from '../../../test/gateway-kit.ts';
import { api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeOpenAiKey } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
  const stored = await call(api(), testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '100.00000000' },
    token: developerKey,
  });
  expect(stored.status).toBe(201);
});

const features = `/v1/developer/apps/${demoPublicAppId}/features`;

/** The usage record of a call and the feature prices its booking recorded. */
async function booked(requestId: string) {
  const [row] = await sql<{ route_mode: string; retail_usd: string; feature_pricing: Record<string, unknown> }>(
    testEnv,
    `select u.route_mode, u.retail_usd::text, t.metadata -> 'feature_pricing' as feature_pricing
       from usage_events u join ledger_transactions t on t.id = u.ledger_transaction_id where u.client_request_id = $1`,
    [requestId],
  );
  return row;
}

describe('a feature price change', () => {
  it('books a call authorized before the change at the old price and the next call at the new one', async () => {
    const created = await call(api(), testEnv, features, {
      json: { feature_key: 'priced', name: 'Priced', default_model: 'openai:gpt-4o-mini', developer_price_per_mtok_usd: '2.00000000' },
      token: developerKey,
    });
    expect(created.status).toBe(201);
    const session = await fundedSession(testEnv);

    // The first call is held at the upstream until the price has changed.
    let release: (response: Response) => void = () => undefined;
    const held = new Promise<Response>((resolve) => {
      release = resolve;
    });
    let reached: () => void = () => undefined;
    const upstreamReached = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const slow = fakeUpstream(() => {
      reached();
      return held;
    });
    const body = { model: 'openai:gpt-4o-mini', feature: 'priced', messages: [userMessage('hi')] };
    const first = newRequestId();
    const inFlight = chat(gatewayWith({ upstreamFetch: slow.fetch }), testEnv, session.token, body, first);
    await upstreamReached;
    const changed = await call(api(), testEnv, `${features}/priced`, {
      method: 'PATCH',
      json: { developer_price_per_mtok_usd: '5.00000000' },
      token: developerKey,
    });
    expect(changed.status).toBe(200);
    release(jsonResponse(openAiCompletion('hello')));
    expect((await inFlight).status).toBe(200);

    const second = newRequestId();
    const fast = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
    expect((await chat(gatewayWith({ upstreamFetch: fast.fetch }), testEnv, session.token, body, second)).status).toBe(200);

    // 11 + 7 tokens of the fake completion at 2 and then 5 USD per million, once booked.
    await settled(testEnv);
    expect(await booked(first)).toEqual({
      route_mode: 'developer_key',
      retail_usd: '0.00003600',
      feature_pricing: { feature_key: 'priced', developer_price_per_mtok_usd: '2.00000000', open_fee_usd: '0.00000000' },
    });
    expect(await booked(second)).toEqual({
      route_mode: 'developer_key',
      retail_usd: '0.00009000',
      feature_pricing: { feature_key: 'priced', developer_price_per_mtok_usd: '5.00000000', open_fee_usd: '0.00000000' },
    });
  });
});
