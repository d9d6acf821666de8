import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { SqlDatabase } from '#shared/query.ts';
import { bookPayout } from '#shared/ledger/book-payout.ts';
import { reservePayouts } from '#shared/ledger/reserve-payouts.ts';
import { parseWireAmount, wireAmountSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { approvePayout } from '../payments/approve-payout.ts';
import { closePayout, type PayoutClosing } from '../payments/close-payout.ts';
import { findPayout, listPayouts } from '../payments/find-payouts.ts';
import { payoutStatuses, payoutView, PayoutSchema } from '../payments/payout-view.ts';

const PayoutList = z.object({ data: z.array(PayoutSchema) }).openapi('PayoutList');
const IdParam = z.object({ id: z.string() });
const json = <T extends z.ZodType>(schema: T) => ({ content: { 'application/json': { schema } } });

const runMock = createRoute({
  method: 'post',
  path: '/v1/admin/payouts/run-mock',
  summary: 'Create one pending payout per developer wallet whose available balance reaches the threshold (no money moves)',
  middleware: [requireAdmin()] as const,
  request: { body: { required: true, ...json(z.strictObject({ threshold_usd: wireAmountSchema }).openapi('RunMockPayoutsRequest')) } },
  responses: { 201: { description: 'Payouts created by this run', ...json(PayoutList) }, ...errorResponses(400, 401, 429) },
});

const list = createRoute({
  method: 'get',
  path: '/v1/admin/payouts',
  summary: 'Payouts, newest first',
  middleware: [requireAdmin()] as const,
  request: {
    query: z.object({
      status: z.enum(payoutStatuses).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: { 200: { description: 'Payouts', ...json(PayoutList) }, ...errorResponses(400, 401, 429) },
});

const approve = createRoute({
  method: 'post',
  path: '/v1/admin/payouts/{id}/approve',
  summary: 'pending → processing, with the operator note; any other state → 409 invalid_state',
  middleware: [requireAdmin()] as const,
  request: {
    params: IdParam,
    body: {
      required: true,
      ...json(z.strictObject({ operator_note: z.string().trim().min(1).max(1000) }).openapi('ApprovePayoutRequest')),
    },
  },
  responses: { 200: { description: 'Approved', ...json(PayoutSchema) }, ...errorResponses(400, 401, 404, 409, 429) },
});

const markPaid = createRoute({
  method: 'post',
  path: '/v1/admin/payouts/{id}/mark-paid',
  summary:
    'processing → paid, booking the payout in the ledger; a wallet that no longer covers it → 402; any other state → 409 invalid_state',
  middleware: [requireAdmin()] as const,
  request: {
    params: IdParam,
    body: { required: false, ...json(z.strictObject({ operator_note: z.string().trim().min(1).max(1000).optional() })) },
  },
  responses: { 200: { description: 'Paid', ...json(PayoutSchema) }, ...errorResponses(400, 401, 402, 404, 409, 429) },
});

const closeRoute = (action: 'cancel' | 'reject', to: PayoutClosing) =>
  createRoute({
    method: 'post',
    path: `/v1/admin/payouts/{id}/${action}`,
    summary: `pending (or processing its wallet no longer covers) → ${to}, releasing the payout's reservation, with the operator note (repeating it is a no-op); any other state → 409 invalid_state`,
    middleware: [requireAdmin()] as const,
    request: {
      params: IdParam,
      body: {
        required: true,
        ...json(
          z
            .strictObject({ operator_note: z.string().trim().min(1).max(1000) })
            .openapi(`${action === 'cancel' ? 'Cancel' : 'Reject'}PayoutRequest`),
        ),
      },
    },
    responses: {
      200: { description: `${to[0]!.toUpperCase()}${to.slice(1)}`, ...json(PayoutSchema) },
      ...errorResponses(400, 401, 404, 409, 429),
    },
  });
const cancel = closeRoute('cancel', 'cancelled');
const reject = closeRoute('reject', 'rejected');

async function current(db: SqlDatabase, id: string) {
  const row = await findPayout(db, id);
  if (!row) throw new FaucetError('not_found', 'payout not found');
  return payoutView(row);
}

function refuse(outcome: 'invalid_state' | 'not_found', transition: string): never {
  if (outcome === 'not_found') throw new FaucetError('not_found', 'payout not found');
  throw new FaucetError('invalid_state', `payout cannot be ${transition} in its current state`);
}

export function registerAdminPayoutRoutes(app: ServiceApp): void {
  app.openapi(runMock, async (c) => {
    const threshold = parseWireAmount(c.req.valid('json').threshold_usd, { positive: true });
    const rows = await reservePayouts(c.var.database().db, { threshold, requestId: c.var.requestId });
    return c.json({ data: rows.map(payoutView) }, 201);
  });

  app.openapi(list, async (c) => {
    const { status, limit } = c.req.valid('query');
    const rows = await listPayouts(c.var.database().db, { ...(status ? { status } : {}), limit });
    return c.json({ data: rows.map(payoutView) }, 200);
  });

  app.openapi(approve, async (c) => {
    const { id } = c.req.valid('param');
    const { db } = c.var.database();
    const outcome = await approvePayout(db, { payoutId: id, operatorNote: c.req.valid('json').operator_note, requestId: c.var.requestId });
    if (outcome !== 'approved') refuse(outcome, 'approved');
    return c.json(await current(db, id), 200);
  });

  for (const [route, to, verb] of [
    [cancel, 'cancelled', 'cancelled'],
    [reject, 'rejected', 'rejected'],
  ] as const) {
    app.openapi(route, async (c) => {
      const { id } = c.req.valid('param');
      const { db } = c.var.database();
      const outcome = await closePayout(db, {
        payoutId: id,
        to,
        operatorNote: c.req.valid('json').operator_note,
        requestId: c.var.requestId,
      });
      if (outcome === 'invalid_state' || outcome === 'not_found') refuse(outcome, verb);
      return c.json(await current(db, id), 200);
    });
  }

  app.openapi(markPaid, async (c) => {
    const { id } = c.req.valid('param');
    const { db } = c.var.database();
    const body = (await c.req.text()) ? c.req.valid('json') : {};
    const result = await bookPayout(db, { payoutId: id, operatorNote: body.operator_note ?? null, requestId: c.var.requestId });
    if (result.outcome !== 'paid') refuse(result.outcome, 'marked paid');
    return c.json(await current(db, id), 200);
  });
}
