/** Stored keys on the streaming path: the key goes upstream, the last event names the route, budgets settle or come back. */
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, openAiChunk, openAiSse, sseResponse } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, settled, sseData } from '../../../test/gateway-kit.ts';
import { developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
const upstream = fakeUpstream((request) =>
  (request.body as { messages: Array<{ content: string }> }).messages[0]!.content === 'fail please'
    ? jsonResponse({ error: { message: 'no' } }, 500)
    : sseResponse(
        openAiSse([
          openAiChunk({ content: 'Hel' }),
          openAiChunk({ content: 'lo' }, 'stop'),
          openAiChunk({}, null, { prompt_tokens: 11, completion_tokens: 7 }),
        ]),
      ),
);
const gateway = gatewayWith({ upstreamFetch: upstream.fetch });
const hi = { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 7, stream: true };

beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-key-for-tests-000000' });
});

async function streamed(token: string, body: Record<string, unknown>) {
  const sent = upstream.requests.length;
  const response = await chat(gateway, testEnv, token, body);
  const text = await response.text();
  const events = sseData(text)
    .filter((data) => data !== '[DONE]')
    .map((data) => JSON.parse(data));
  return { status: response.status, last: events.at(-1), authorization: upstream.requests.slice(sent)[0]?.headers.authorization, text };
}

describe('streaming with stored keys', () => {
  it('streams with the BYOK key and the developer key, and books each on its route', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const userKey = fakeOpenAiKey();
    const developerApiKey = fakeOpenAiKey();
    await send(testEnv, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: userKey }, token: session.token });
    const developer = await send(testEnv, '/v1/developer/provider-keys', {
      json: { provider: 'openai', api_key: developerApiKey, monthly_budget_usd: '1.00000000' },
      token: developerKey,
    });

    const byok = await streamed(session.token, { ...hi, route_mode: 'byok' });
    expect(byok.authorization).toBe(`Bearer ${userKey}`);
    expect(byok.last).toMatchObject({ object: 'faucet.usage', faucet: { route_mode: 'byok' } });

    const viaDeveloper = await streamed(session.token, hi);
    expect(viaDeveloper.authorization).toBe(`Bearer ${developerApiKey}`);
    expect(viaDeveloper.last).toMatchObject({ object: 'faucet.usage', faucet: { route_mode: 'developer_key' } });
    await settled(testEnv);
    const [usage] = await sql<{ provider_credential_id: string }>(
      testEnv,
      'select provider_credential_id from usage_events where client_request_id = $1',
      [viaDeveloper.last.faucet.request_id],
    );
    expect(usage!.provider_credential_id).toBe(developer.body.id);
    expect(byok.text + viaDeveloper.text).not.toContain(userKey.slice(8));
    expect(byok.text + viaDeveloper.text).not.toContain(developerApiKey.slice(8));

    const failed = await streamed(session.token, { ...hi, messages: [{ role: 'user', content: 'fail please' }] });
    expect(failed.status).toBe(502);
    expect(failed.authorization).toBe(`Bearer ${developerApiKey}`);
    await settled(testEnv);
    const open = await sql(
      testEnv,
      `select 1 from provider_credential_reservations r
        where r.credential_id = $1 and not exists (select 1 from usage_events u where u.request_id = r.request_id)`,
      [developer.body.id],
    );
    expect(open).toEqual([]);
  });
});
