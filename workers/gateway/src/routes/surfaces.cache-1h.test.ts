/**
 * One-hour prompt-cache writes (docs/surfaces.md, "Prompt caching"), written as a client calls: a
 * `cache_control: {type: 'ephemeral', ttl: '1h'}` breakpoint reaches the (fake) Anthropic upstream
 * with its ttl, from the Messages surface and from chat completions; the upstream reports the writes
 * split by lifetime (`usage.cache_creation`), the Messages answer gives that split back, and the
 * booking charges the one-hour writes at the one-hour price (claude-haiku-4-5: input 1, cache read
 * 0.10, five-minute write 1.25, one-hour write 2, output 5 USD per million). Each suite ends with
 * the upstream audit and reconciliation.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { addUsd, applyBasisPoints, formatUsd, parseWireAmount, priceTokensThenRound, type Usd } from '#shared/money/index.ts';
import { ratingSettingsFor } from '#shared/rating/index.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, sseResponse, type FakeUpstream } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, newRequestId, postToGateway, settled } from '../../../test/gateway-kit.ts';
import { expectBooksAgree } from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    ANTHROPIC_API_KEY: 'sk-ant-platform-pool-test',
    ANTHROPIC_BASE_URL: 'https://anthropic-proxy.example.com/',
  });
});

type Body = Record<string, unknown>;

const post = (app: ReturnType<typeof gatewayWith>, path: string, body: unknown, headers: Record<string, string>) =>
  postToGateway(app, testEnv, path, body, headers);

const anthropicHeaders = (token: string, requestId: string) => ({
  'x-api-key': token,
  'anthropic-version': '2023-06-01',
  'x-request-id': requestId,
});

const usd = (text: string): Usd => parseWireAmount(text);

/** What the writes cost at claude-haiku-4-5's catalog prices, summed exactly and rounded up once; the retail at the test env's markup. */
function expectedCharge(tokens: { input: number; cacheRead: number; write5m: number; write1h: number; output: number }) {
  const upstream = priceTokensThenRound(
    [
      [usd('1.00000000'), BigInt(tokens.input)],
      [usd('0.10000000'), BigInt(tokens.cacheRead)],
      [usd('1.25000000'), BigInt(tokens.write5m)],
      [usd('2.00000000'), BigInt(tokens.write1h)],
      [usd('5.00000000'), BigInt(tokens.output)],
    ],
    'up',
  );
  const retail = addUsd(upstream, applyBasisPoints(upstream, ratingSettingsFor(testEnv, null).platformMarkupBps, 'up'));
  return { upstream_cost_usd: formatUsd(upstream), retail_usd: formatUsd(retail) };
}

interface BookedRow {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  cache_write_price_per_mtok_usd: string;
  cache_write_1h_price_per_mtok_usd: string;
  upstream_cost_usd: string;
  retail_usd: string;
}

async function bookedRow(requestId: string): Promise<BookedRow | undefined> {
  await settled(testEnv);
  const rows = await sql<BookedRow>(
    testEnv,
    `select input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_write_1h_tokens,
            cache_write_price_per_mtok_usd::text, cache_write_1h_price_per_mtok_usd::text, upstream_cost_usd::text, retail_usd::text
       from usage_events where client_request_id = $1`,
    [requestId],
  );
  expect(rows).toHaveLength(1);
  return rows[0];
}

/** The upstream audit and reconciliation over the fake's calls, each reporting `prompt` input and `completion` output tokens. */
function expectAudited(upstream: FakeUpstream, prompt: number, completion: number) {
  return expectBooksAgree(testEnv, upstream.requests, () => ({
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  }));
}

const reported = {
  input_tokens: 12,
  cache_creation_input_tokens: 3000,
  cache_read_input_tokens: 9000,
  cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
  output_tokens: 20,
};
const reportedTokens = { input: 12, cacheRead: 9000, write5m: 1000, write1h: 2000, output: 20 };

describe('one-hour cache writes on the Messages surface', () => {
  const cachedAsk = {
    model: 'anthropic:claude-haiku-4-5',
    max_tokens: 200,
    system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
  };

  it('sends the ttl to Anthropic, answers its split, and books the one-hour writes at the one-hour price', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() =>
      jsonResponse({
        id: 'msg_1h',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5',
        content: [{ type: 'text', text: 'Cached for an hour.' }],
        stop_reason: 'end_turn',
        usage: reported,
      }),
    );
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/messages',
      cachedAsk,
      anthropicHeaders(session.token, requestId),
    );
    expect(answer.status).toBe(200);

    expect(upstream.requests).toHaveLength(1);
    const sent = upstream.requests[0]?.body as Body;
    expect(sent.system).toEqual([{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }]);
    // No beta header: the one-hour ttl is generally available.
    expect(upstream.requests[0]?.headers['anthropic-beta']).toBeUndefined();

    const body = answer.json();
    expect(body.usage).toEqual(reported);
    const charge = expectedCharge(reportedTokens);
    expect(body.faucet).toMatchObject({ charge: { amount_usd: charge.retail_usd, upstream_cost_usd: charge.upstream_cost_usd } });

    expect(await bookedRow(requestId)).toEqual({
      input_tokens: 12_012,
      output_tokens: 20,
      cached_tokens: 9000,
      cache_write_tokens: 1000,
      cache_write_1h_tokens: 2000,
      cache_write_price_per_mtok_usd: '1.25000000',
      cache_write_1h_price_per_mtok_usd: '2.00000000',
      ...charge,
    });
    // 12 × 1 + 9,000 × 0.10 + 1,000 × 1.25 + 2,000 × 2 + 20 × 5 per million; all five-minute writes would be 0.00476200.
    expect(charge.upstream_cost_usd).toBe('0.00626200');
    await expectAudited(upstream, 12_012, 20);
  });

  it('streams the split in message_delta and books it, the split from message_start kept when message_delta leaves it out', async () => {
    const session = await fundedSession(testEnv);
    const events: Body[] = [
      {
        type: 'message_start',
        message: { id: 'msg_1h_stream', model: 'claude-haiku-4-5', usage: { ...reported, output_tokens: 1 } },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Cached.' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20 } },
      { type: 'message_stop' },
    ];
    const upstream = fakeUpstream(() => sseResponse(events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)));
    const requestId = newRequestId();
    const answer = await post(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      '/v1/messages',
      { ...cachedAsk, stream: true },
      anthropicHeaders(session.token, requestId),
    );
    expect(answer.status).toBe(200);
    expect((upstream.requests[0]?.body as Body | undefined)?.system).toEqual(cachedAsk.system);

    const delta = answer.text
      .split(/\n\n/)
      .map((block) => /^data: (.+)$/m.exec(block)?.[1])
      .filter((data): data is string => data?.startsWith('{') === true)
      .map((data) => JSON.parse(data) as Body)
      .find((event) => event.type === 'message_delta');
    expect(delta?.usage).toEqual(reported);

    const charge = expectedCharge(reportedTokens);
    expect(await bookedRow(requestId)).toMatchObject({ cache_write_tokens: 1000, cache_write_1h_tokens: 2000, ...charge });
    await expectAudited(upstream, 12_012, 20);
  });
});

describe('one-hour cache writes on chat completions', () => {
  it('sends a chat part’s one-hour breakpoint to Anthropic and names the one-hour writes in the usage; booked at their price', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() =>
      jsonResponse({
        id: 'msg_chat_1h',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5',
        content: [{ type: 'text', text: 'Done.' }],
        stop_reason: 'end_turn',
        usage: reported,
      }),
    );
    const requestId = newRequestId();
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      {
        model: 'anthropic:claude-haiku-4-5',
        max_tokens: 200,
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'Rules.', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
          { role: 'user', content: 'hi' },
        ],
      },
      requestId,
    );
    expect(response.status).toBe(200);
    expect((upstream.requests[0]?.body as Body | undefined)?.system).toEqual([
      { type: 'text', text: 'Rules.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    const body = (await response.json()) as Body;
    expect(body.usage).toMatchObject({
      prompt_tokens: 12_012,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 9000, cache_write_tokens: 3000, cache_write_1h_tokens: 2000 },
    });
    expect(await bookedRow(requestId)).toMatchObject({
      cache_write_tokens: 1000,
      cache_write_1h_tokens: 2000,
      ...expectedCharge(reportedTokens),
    });
    await expectAudited(upstream, 12_012, 20);
  });
});
