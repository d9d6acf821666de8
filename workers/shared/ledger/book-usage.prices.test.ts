/**
 * A booked usage record keeps the catalog version, the token parts and the per-million prices it was
 * rated with, so an old call re-rates to the cent from its row alone (migrations 0013 and 0034).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, sql, type TestEnv } from '../../test/harness.ts';
import { createTestUser, fund, openLedgerDatabase, type LedgerTestDatabase } from '../../test/ledger-kit.ts';
import { rateUsage } from '../rating/index.ts';
import { bookUsage } from './book-usage.ts';
import { bookingElement } from './book-usage-batch.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 5);
});
afterAll(async () => {
  await database.close();
});

interface PriceRow {
  price_catalog_version: string | null;
  input_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  audio_input_tokens: number;
  audio_output_tokens: number;
  reasoning_tokens: number;
  input_price_per_mtok_usd: string | null;
  cached_input_price_per_mtok_usd: string | null;
  cache_write_price_per_mtok_usd: string | null;
  cache_write_1h_price_per_mtok_usd: string | null;
  audio_input_price_per_mtok_usd: string | null;
  output_price_per_mtok_usd: string | null;
  reasoning_price_per_mtok_usd: string | null;
  audio_output_price_per_mtok_usd: string | null;
  upstream_cost_usd: string;
  rerated_usd: string | null;
}

/** The row, and its upstream cost recomputed in SQL from the row alone (Σ class tokens × price / 1e6, rounded up). */
async function priceRow(requestId: string): Promise<PriceRow> {
  const [row] = await sql<PriceRow>(
    testEnv,
    `select price_catalog_version, input_tokens, cached_tokens, cache_write_tokens, cache_write_1h_tokens, audio_input_tokens,
            audio_output_tokens, reasoning_tokens, input_price_per_mtok_usd::text, cached_input_price_per_mtok_usd::text,
            cache_write_price_per_mtok_usd::text, cache_write_1h_price_per_mtok_usd::text, audio_input_price_per_mtok_usd::text,
            output_price_per_mtok_usd::text, reasoning_price_per_mtok_usd::text, audio_output_price_per_mtok_usd::text,
            upstream_cost_usd::text,
            (ceil(((input_tokens - cached_tokens - cache_write_tokens - cache_write_1h_tokens - audio_input_tokens) * input_price_per_mtok_usd
                  + cached_tokens * cached_input_price_per_mtok_usd + cache_write_tokens * cache_write_price_per_mtok_usd
                  + cache_write_1h_tokens * coalesce(cache_write_1h_price_per_mtok_usd, 0)
                  + audio_input_tokens * audio_input_price_per_mtok_usd
                  + (output_tokens - audio_output_tokens - reasoning_tokens) * output_price_per_mtok_usd
                  + reasoning_tokens * reasoning_price_per_mtok_usd + audio_output_tokens * audio_output_price_per_mtok_usd)
                  / 1000000 * 100000000) / 100000000)::numeric(20, 8)::text as rerated_usd
       from usage_events where request_id = $1`,
    [requestId],
  );
  if (!row) throw new Error(`no usage event ${requestId}`);
  return row;
}

describe('bookUsage records the prices it was rated with', () => {
  it('keeps version, token parts and every class price; the row alone re-rates to the booked upstream cost', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    const rated = rateUsage({
      routeMode: 'platform',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      inputTokens: 250_001,
      cachedInputTokens: 100_003,
      cacheWriteTokens: 7_777,
      cacheWrite1hTokens: 5_555,
      outputTokens: 3_333,
      reasoningTokens: 1_111,
      estimated: false,
    });
    const requestId = `prices-${crypto.randomUUID()}`;
    const booked = await bookUsage(database.db, { requestId, appId: user.appId, endUserId: user.endUserId, featureKey: 'chat', rated });
    expect(booked.outcome).toBe('booked');

    const row = await priceRow(requestId);
    // Above 200k input tokens: Anthropic's upper tier for every class.
    expect(row).toMatchObject({
      price_catalog_version: 'genai-prices@0.1.8+faucet.3',
      cached_tokens: 100_003,
      cache_write_tokens: 7_777,
      cache_write_1h_tokens: 5_555,
      reasoning_tokens: 1_111,
      input_price_per_mtok_usd: '6.00000000',
      cached_input_price_per_mtok_usd: '0.60000000',
      cache_write_price_per_mtok_usd: '7.50000000',
      cache_write_1h_price_per_mtok_usd: '12.00000000',
      audio_input_price_per_mtok_usd: '6.00000000',
      output_price_per_mtok_usd: '22.50000000',
      reasoning_price_per_mtok_usd: '22.50000000',
      audio_output_price_per_mtok_usd: '22.50000000',
    });
    expect(row.rerated_usd).toBe(row.upstream_cost_usd);
  });

  it('books a flushed element with one-hour writes at their price, and one kept from before (without those fields) at none', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '10.00000000');
    const rated = (cacheWrite1hTokens: number) =>
      rateUsage({
        routeMode: 'platform',
        provider: 'anthropic',
        model: 'claude-haiku-4-5',
        inputTokens: 10_000,
        cacheWriteTokens: 1_000,
        cacheWrite1hTokens,
        outputTokens: 100,
        estimated: false,
      });
    const withOneHour = `prices-${crypto.randomUUID()}`;
    const before = `prices-${crypto.randomUUID()}`;
    const element = (requestId: string, cacheWrite1hTokens: number) =>
      bookingElement({ requestId, appId: user.appId, endUserId: user.endUserId, featureKey: 'chat', rated: rated(cacheWrite1hTokens) });
    const { cache_write_1h_tokens: _tokens, cache_write_1h_price: _price, ...kept } = element(before, 0);
    const outcomes = await sql<{ outcome: string }>(testEnv, 'select outcome from faucet_book_usage_batch($1::jsonb) order by ordinal', [
      JSON.stringify([element(withOneHour, 4_000), kept]),
    ]);
    expect(outcomes).toEqual([{ outcome: 'booked' }, { outcome: 'booked' }]);

    const booked = await priceRow(withOneHour);
    // 5,000 × 1 + 1,000 × 1.25 + 4,000 × 2 + 100 × 5 per million.
    expect(booked).toMatchObject({
      cache_write_tokens: 1_000,
      cache_write_1h_tokens: 4_000,
      cache_write_1h_price_per_mtok_usd: '2.00000000',
    });
    expect(booked.upstream_cost_usd).toBe('0.01475000');
    expect(booked.rerated_usd).toBe(booked.upstream_cost_usd);
    const old = await priceRow(before);
    expect(old).toMatchObject({ cache_write_1h_tokens: 0, cache_write_1h_price_per_mtok_usd: null });
    expect(old.rerated_usd).toBe(old.upstream_cost_usd);
  });

  it('records no prices for a call that needed none (byok)', async () => {
    const user = await createTestUser(testEnv);
    const rated = rateUsage({
      routeMode: 'byok',
      provider: 'openai',
      model: 'gpt-4o-mini',
      inputTokens: 10,
      outputTokens: 10,
      estimated: false,
    });
    const requestId = `prices-${crypto.randomUUID()}`;
    await bookUsage(database.db, { requestId, appId: user.appId, endUserId: user.endUserId, featureKey: 'chat', rated });
    const row = await priceRow(requestId);
    expect(row.price_catalog_version).toBeNull();
    expect(row.input_price_per_mtok_usd).toBeNull();
    expect(row.cache_write_1h_price_per_mtok_usd).toBeNull();
    expect(row.rerated_usd).toBeNull();
  });

  it('refuses a record whose token parts exceed its totals, writing nothing', async () => {
    const user = await createTestUser(testEnv);
    const rated = rateUsage({
      routeMode: 'byok',
      provider: 'openai',
      model: 'gpt-4o-mini',
      inputTokens: 10,
      outputTokens: 10,
      estimated: false,
    });
    const requestId = `prices-${crypto.randomUUID()}`;
    const error = await bookUsage(database.db, {
      requestId,
      appId: user.appId,
      endUserId: user.endUserId,
      featureKey: 'chat',
      rated: { ...rated, cacheWriteTokens: 11 },
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(await sql(testEnv, 'select 1 from usage_events where request_id = $1', [requestId])).toEqual([]);
  });
});
