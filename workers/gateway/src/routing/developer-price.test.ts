/**
 * The developer-key hold is priced in SQL (`faucet_developer_price`, migration 0009) because the
 * feature's price is only read inside the authorize statement. These vectors pin it to the money
 * module: for every case the SQL amount equals the retail `rateUsage` charges on the developer_key
 * route for the same tokens, so the hold is exactly the worst-case charge, never less.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseWireAmount } from '#shared/money/index.ts';
import { rateUsage } from '#shared/rating/index.ts';
import { createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const vectors: Array<[pricePerMillion: string, inputTokens: number, outputTokens: number]> = [
  ['0.00000001', 1, 0],
  ['0.15000000', 1, 1],
  ['0.15000000', 333, 667],
  ['2.50000000', 999_999, 1],
  ['3.00000000', 128_000, 64_000],
  ['15.00000000', 1, 0],
  ['0.33333333', 7, 3],
  ['99.99999999', 2_000_000, 200_000],
  ['1000.00000000', 3, 0],
  ['0.00000007', 123_456_789, 0],
];

describe('faucet_developer_price', () => {
  it.each(vectors)('%s USD per million × %i + %i tokens equals the money module’s developer_key retail', async (price, input, output) => {
    const rated = rateUsage(
      { routeMode: 'developer_key', provider: 'openai', model: 'gpt-4o-mini', inputTokens: input, outputTokens: output, estimated: true },
      { developerPrice: { inputPerMillion: parseWireAmount(price), outputPerMillion: parseWireAmount(price) } },
    );
    const [row] = await sql<{ amount: string }>(testEnv, 'select faucet_developer_price($1::numeric, $2::bigint)::text as amount', [
      price,
      input + output,
    ]);
    expect(row?.amount).toBe(formatUsd(rated.retailUsd));
  });
});
