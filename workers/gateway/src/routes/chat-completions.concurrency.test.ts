import { beforeAll, describe, expect, it } from 'vitest';
import { addUsd, formatUsd, parseWireAmount, subtractUsd, zeroUsd } from '#shared/money/index.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, newRequestId, settled, userMessage, wallet } from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

describe('concurrent calls', () => {
  it('that together exceed the balance never overdraw it: the excess is refused with 402 before reaching the upstream', async () => {
    // The upstream takes a while, so the calls' holds overlap. Each call holds ~0.00021 USD
    // (1000 prompt bytes, max_tokens 40) and costs ~0.000065; twelve of them cost more than 0.0005.
    const upstream = fakeUpstream(async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return jsonResponse(openAiCompletion('x', { prompt_tokens: 200, completion_tokens: 40, total_tokens: 240 }));
    });
    const funded = '0.00050000';
    const session = await fundedSession(testEnv, funded);
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const body = { model: 'openai:gpt-4o-mini', feature: 'chat', max_tokens: 40, messages: [userMessage('word '.repeat(200).trim())] };
    const responses = await Promise.all(Array.from({ length: 12 }, () => chat(app, testEnv, session.token, body, newRequestId())));

    const statuses = responses.map((response) => response.status);
    const succeeded = responses.filter((response) => response.status === 200);
    expect(statuses.every((status) => status === 200 || status === 402)).toBe(true);
    expect(statuses).toContain(402);
    expect(succeeded.length).toBeGreaterThan(0);
    // Refused calls were refused by the hold, before any upstream cost was incurred.
    expect(upstream.requests).toHaveLength(succeeded.length);

    let charged = zeroUsd();
    for (const response of succeeded) {
      const { faucet } = (await response.json()) as { faucet: { charge: { amount_usd: string } } };
      charged = addUsd(charged, parseWireAmount(faucet.charge.amount_usd));
    }
    await settled(testEnv);
    const after = await wallet(testEnv, session.walletId);
    expect(after.balance).toBe(formatUsd(subtractUsd(parseWireAmount(funded), charged)));
    expect(after.balance.startsWith('-')).toBe(false);
    expect(after.held).toBe('0.00000000');

    // The wallet's balance is exactly the sum of its entries.
    const [entries] = await sql<{ total: string }>(
      testEnv,
      'select coalesce(sum(amount), 0)::numeric(20,8)::text as total from ledger_entries where wallet_id = $1',
      [session.walletId],
    );
    expect(entries?.total).toBe(after.balance);
  });
});
