import { beforeAll, expect, it } from 'vitest';
import { api, call, createTestEnv, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

it('describes the payment, payout and report routes in the OpenAPI document', async () => {
  const response = await call(api(), testEnv, '/openapi.json');
  const document = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect(operations).toEqual(
    expect.arrayContaining([
      'POST /v1/user/stripe/checkout-sessions',
      'GET /v1/user/stripe/checkout-sessions/{checkout_session_id}',
      'POST /v1/webhooks/stripe',
      'POST /v1/admin/payouts/run-mock',
      'GET /v1/admin/payouts',
      'POST /v1/admin/payouts/{id}/approve',
      'POST /v1/admin/payouts/{id}/mark-paid',
      'GET /v1/admin/reports/usage.csv',
      'GET /v1/admin/reports/revenue.csv',
      'GET /v1/admin/reports/payouts.csv',
      'GET /v1/admin/stripe/webhook-events',
      'POST /v1/admin/stripe/checkout-sessions/{checkout_session_id}/replay',
    ]),
  );
});
