/**
 * Secret scan: a session of ordinary and hostile use of every part (sessions, BYOK and developer
 * provider keys, platform and BYOK calls plain and streamed, an upstream quoting the key back,
 * refused bodies carrying the prompt, local usage, checkout and webhook, payouts, CSV reports), then
 * every captured log line, every response, every CSV and every column of every table (except the
 * encrypted key column) is searched for the provider keys, the session token, the raw external user
 * id, the admin token, the developer key and the prompt text. None may appear, with two stated
 * exceptions: the response that issues the session token, and model answers (the echo model repeats
 * the prompt, as a model may).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { completedEvent, deliver } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiChunk, openAiCompletion } from '../../../test/fake-upstream.ts';
import { gatewayWith } from '../../../test/gateway-kit.ts';
import { localUsageReport } from './abuse-kit.ts';

const random = () => crypto.randomUUID().replace(/-/g, '');
const canary = {
  externalUserId: `ext-user-canary-${random()}`,
  userProviderKeyBody: `CANARYuser${random()}`,
  developerProviderKeyBody: `CANARYdev${random()}`,
  prompt: `PROMPT-CANARY-${random()} please keep this private`,
};
const userProviderKey = `sk-proj-${canary.userProviderKeyBody}WXYZ`;
const developerProviderKey = `sk-ant-api03-${canary.developerProviderKeyBody}ABCD`;

let testEnv: TestEnv;
const logs: string[] = [];
const responses: Array<{ label: string; text: string; exempt?: 'session_token' | 'model_answer' }> = [];
let sessionToken = '';

async function send(
  label: string,
  app: Parameters<typeof call>[0],
  path: string,
  options: Parameters<typeof call>[3] = {},
  exempt?: 'session_token' | 'model_answer',
) {
  const response = await call(app, testEnv, path, options);
  const text = await response.text();
  responses.push({
    label: `${label} (${response.status})`,
    text: `${JSON.stringify(Object.fromEntries(response.headers))}\n${text}`,
    ...(exempt ? { exempt } : {}),
  });
  return { status: response.status, text };
}

beforeAll(async () => {
  for (const method of ['log', 'warn', 'error', 'info', 'debug'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      logs.push(args.map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg))).join(' '));
    });
  }
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-key-not-a-canary', LOG_LEVEL: 'debug' });
});
afterAll(() => vi.restoreAllMocks());

describe('secret scan', () => {
  it('leaves no secret, token, raw user id or prompt text in logs, responses, CSVs or database columns', async () => {
    const session = await send(
      'session',
      api(),
      '/v1/sessions',
      { json: { public_app_id: 'app_demo_local', external_user_id: canary.externalUserId }, token: developerKey },
      'session_token',
    );
    const { session_token: issued, user_ref: userRef } = JSON.parse(session.text) as { session_token: string; user_ref: string };
    sessionToken = issued;
    const bearer = { token: sessionToken };

    await send('user key', api(), '/v1/user/provider-keys', {
      ...bearer,
      json: { provider: 'openai', api_key: userProviderKey, label: 'mine' },
    });
    await send('user key again (conflict)', api(), '/v1/user/provider-keys', {
      ...bearer,
      json: { provider: 'openai', api_key: userProviderKey },
    });
    await send('user key bad format', api(), '/v1/user/provider-keys', {
      ...bearer,
      json: { provider: 'anthropic', api_key: userProviderKey },
    });
    await send('developer key', api(), '/v1/developer/provider-keys', {
      token: developerKey,
      json: { provider: 'anthropic', api_key: developerProviderKey, monthly_budget_usd: '5.00000000' },
    });
    await send('user keys', api(), '/v1/user/provider-keys', bearer);
    await send('developer keys', api(), '/v1/developer/provider-keys', { token: developerKey });

    const wallet = JSON.parse((await send('wallet', api(), '/v1/user/wallet', bearer)).text) as { wallet_id: string };
    await send('credit', api(), `/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, {
      token: adminToken,
      json: { amount_usd: '2.00000000' },
    });

    const messages = [{ role: 'user', content: canary.prompt }];
    const upstream = fakeUpstream((request) => {
      const body = request.body as { stream?: boolean; model: string };
      if (body.model === 'gpt-4.1-mini') {
        // Providers quote the key they refused; none of it may travel on.
        return jsonResponse({ error: { message: `Incorrect API key provided: ${request.headers.authorization}. ${canary.prompt}` } }, 401);
      }
      if (body.stream) {
        const events = [
          openAiChunk({ content: 'ok' }),
          openAiChunk({}, 'stop'),
          openAiChunk({}, null, { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 }),
        ];
        return new Response(`${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('')}data: [DONE]\n\n`, {
          headers: { 'content-type': 'text/event-stream' },
        });
      }
      return jsonResponse(openAiCompletion('ok'));
    });
    const gateway = gatewayWith({ upstreamFetch: upstream.fetch });
    const chat = (label: string, body: Record<string, unknown>, exempt?: 'model_answer') =>
      send(label, gateway, '/v1/chat/completions', { ...bearer, json: { feature: 'chat', max_tokens: 64, messages, ...body } }, exempt);
    await chat('platform mock', { model: 'mock:echo' }, 'model_answer');
    await chat('platform mock stream', { model: 'mock:echo', stream: true }, 'model_answer');
    await chat('byok', { model: 'openai:gpt-4o-mini', route_mode: 'byok' }, 'model_answer');
    await chat('byok stream', { model: 'openai:gpt-4o-mini', route_mode: 'byok', stream: true }, 'model_answer');
    await chat('byok refused by provider', { model: 'openai:gpt-4.1-mini', route_mode: 'byok' });
    await chat('invalid body with the prompt', { model: 'mock:echo', max_tokens: 'many' });
    await send('chat with a bad token', gateway, '/v1/chat/completions', {
      token: adminToken,
      json: { model: 'mock:echo', feature: 'chat', messages },
    });

    const report = localUsageReport(`local-${random()}`, userRef);
    await send('local usage with a prompt field', api(), '/v1/usage/local', { ...bearer, json: { ...report, prompt: canary.prompt } });
    await send('local usage', api(), '/v1/usage/local', { ...bearer, json: report });
    await send('usage', api(), '/v1/user/usage', bearer);

    const checkout = await send('checkout', api(), '/v1/user/stripe/checkout-sessions', {
      ...bearer,
      json: { amount_usd: '5.00000000', return_url: 'https://app.example.test/billing' },
    });
    const { checkout_session_id: checkoutId, amount_cents: cents } = JSON.parse(checkout.text) as {
      checkout_session_id: string;
      amount_cents: number;
    };
    const receipt = await deliver(testEnv, completedEvent(checkoutId, cents));
    expect(receipt.body.credited).toBe(true);

    await send('payouts', api(), '/v1/admin/payouts/run-mock', { token: adminToken, json: { threshold_usd: '0.00000001' } });
    await send('wrong admin token', api(), '/v1/admin/payouts', { token: `${adminToken}x` });
    for (const name of ['usage', 'revenue', 'payouts'])
      await send(`${name} csv`, api(), `/v1/admin/reports/${name}.csv`, { token: adminToken });
    await send('reconciliation', api(), '/v1/admin/reconciliation/ledger', { token: adminToken });

    const tables = await sql<{ table_name: string }>(
      testEnv,
      `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
    );
    const database: Array<{ label: string; text: string }> = [];
    for (const { table_name } of tables) {
      const rows = await sql<{ row: string }>(testEnv, `select (to_jsonb(t) - 'ciphertext')::text as row from "${table_name}" t`);
      for (const row of rows) database.push({ label: `table ${table_name}`, text: row.row });
    }

    const secrets: Array<[string, string]> = [
      ['user provider key', canary.userProviderKeyBody],
      ['developer provider key', canary.developerProviderKeyBody],
      ['session token', sessionToken.slice(4)],
      ['raw external user id', canary.externalUserId],
      ['admin token', adminToken],
      ['developer key', developerKey],
      ['prompt text', canary.prompt.slice(0, 24)],
    ];
    const places = [
      ...logs.map((text, index) => ({ label: `log line ${index}`, text, exempt: undefined as string | undefined })),
      ...responses,
      ...database,
    ];
    expect(logs.length).toBeGreaterThan(10);
    expect(responses.filter((response) => response.label.includes('csv (200)'))).toHaveLength(3);
    const leaks: string[] = [];
    for (const place of places) {
      for (const [name, secret] of secrets) {
        const exempt = 'exempt' in place ? place.exempt : undefined;
        if (exempt === 'session_token' && name === 'session token') continue;
        if (exempt === 'model_answer' && name === 'prompt text') continue;
        if (place.text.includes(secret)) leaks.push(`${name} in ${place.label}: ${place.text.slice(0, 300)}`);
      }
    }
    expect(leaks).toEqual([]);
    // The scan can see: the exempted places do hold what it looks for, and the paths were really taken.
    expect(
      responses.some((response) => response.exempt === 'session_token' && response.text.includes(sessionToken.slice(4))),
      'session token visible',
    ).toBe(true);
    expect(
      responses.some((response) => response.exempt === 'model_answer' && response.text.includes(canary.prompt.slice(0, 24))),
      'echo visible',
    ).toBe(true);
    const labels = responses.map((response) => response.label);
    expect(labels).toEqual(
      expect.arrayContaining(['byok (200)', 'byok stream (200)', 'user key (201)', 'developer key (201)', 'local usage (200)']),
    );
    expect(
      upstream.requests.some((request) => request.headers.authorization?.includes(canary.userProviderKeyBody)),
      'key upstream',
    ).toBe(true);
  });
});
