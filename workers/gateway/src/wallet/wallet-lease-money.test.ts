/**
 * Money around a wallet object's lease. A debit outside the gateway recalls the lease
 * first; a top-up is spendable by the next call; a call whose gateway died mid-way is booked at its
 * bound by the object's alarm once its deadline and grace pass.
 */
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { walletOfToken } from '#shared/auth/session-token.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { chargeRefundedEvent } from '../../../../scripts/lib/stripe-events.ts';
import { adminToken, api, call, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { deliver, paidCheckout } from '../../../test/payments-kit.ts';
import { chat, fund, fundedSession, gatewayWith, wallet } from '../../../test/gateway-kit.ts';
import { openLedgerDatabase } from '../../../test/ledger-kit.ts';
import {
  authorizeOnly,
  expectBooksAgree,
  leasedTestEnv,
  unitsOf,
  platformCall,
  reportedUsage,
  sweepCallNow,
  walletObjectOf,
} from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await leasedTestEnv();
});

const reported = reportedUsage;
const body = platformCall;
const objectOf = walletObjectOf;

async function reconciled(): Promise<boolean> {
  const database = openLedgerDatabase(testEnv, 1);
  try {
    return (await reconcileLedger(database.db)).ok;
  } finally {
    await database.close();
  }
}

/** Runs `work` while every release of a lease (status set to `released`) takes a second in Postgres. */
async function withSlowRelease<T>(work: () => Promise<T>): Promise<T> {
  await sql(
    testEnv,
    `create or replace function test_slow_release() returns trigger language plpgsql as $$
     begin perform pg_sleep(1); return new; end $$`,
  );
  await sql(
    testEnv,
    `create trigger test_slow_release before update on balance_holds for each row
     when (new.status = 'released') execute function test_slow_release()`,
  );
  try {
    return await work();
  } finally {
    await sql(testEnv, 'drop trigger test_slow_release on balance_holds');
  }
}

/** Every call the upstream answered is booked once, with at least the tokens it reported; the ledger reconciles. */

/** A funded end user whose object holds a lease after one call, nothing left unflushed. */
async function leasedWallet() {
  const session = await fundedSession(testEnv, '1.00000000');
  const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('Hi', reported)));
  const gateway = gatewayWith({ upstreamFetch: upstream.fetch });
  expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
  const object = objectOf(session.token);
  await object.flush();
  return { session, upstream, gateway, object };
}

/** The lease hold of the wallet a session token names, as Postgres has it. */
async function leaseOf(token: string) {
  const [lease] = await sql<{ amount: string; status: string }>(
    testEnv,
    'select amount::text, status from balance_holds where request_id = $1',
    [`lease:${walletOfToken(token)}`],
  );
  return lease;
}

describe('money outside the gateway', () => {
  it('a recall whose release is slow still holds new leases back for the debit once it is written, until the debit resumes it', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = fakeUpstream(() => jsonResponse(openAiCompletion('Hi', reported)));
    expect((await chat(gatewayWith({ upstreamFetch: fake.fetch }), testEnv, session.token, body)).status).toBe(200);
    const object = objectOf(session.token);
    type Leases = { recalling(): boolean; syncNow(...args: unknown[]): Promise<unknown> };
    const leasesOf = (instance: unknown) => (instance as { leases: Leases }).leases;
    // The release statement takes longer than the pause a recall gives its debit (3 s).
    await runInDurableObject(object, (instance) => {
      const leases = leasesOf(instance);
      const syncNow = leases.syncNow.bind(leases);
      leases.syncNow = async (...args: unknown[]) => {
        if (args[1] === true) await new Promise((resolve) => setTimeout(resolve, 3_500));
        return syncNow(...args);
      };
    });
    await object.recall();
    // The debit is only now written: a call arriving meanwhile must still find new leases held back.
    expect(await runInDurableObject(object, (instance) => leasesOf(instance).recalling())).toBe(true);
    await object.resume();
    expect(await runInDurableObject(object, (instance) => leasesOf(instance).recalling())).toBe(false);
    // The recall booked what the object settled: the books agree, and the upstream call is billed once.
    expect(await reconciled()).toBe(true);
    await expectBooksAgree(testEnv, [...fake.requests]);
  });

  it('an operator debit recalls the lease: what the object settled is booked first, then the debit meets the whole balance', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const gateway = gatewayWith({ upstreamFetch: fakeUpstream(() => jsonResponse(openAiCompletion('Hi', reported))).fetch });
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    // The lease holds (almost) the whole balance: without the recall the debit finds nothing available.
    expect(unitsOf((await wallet(testEnv, session.walletId)).available)).toBeLessThan(unitsOf('0.90000000'));
    const debit = await call(api(), testEnv, `/v1/admin/wallets/${session.walletId}/adjustments`, {
      json: { kind: 'adjustment', direction: 'debit', amount_usd: '0.90000000', reason: 'test: operator debit' },
      token: adminToken,
    });
    expect(debit.status).toBe(201);
    // The settled call was booked before the debit, and nothing is left in the object.
    const snapshot = await objectOf(session.token).snapshot();
    expect(snapshot).toMatchObject({ unflushed: 0, inFlight: 0, leaseUsd: '0.00000000' });
    const [usage] = await sql<{ n: number }>(testEnv, 'select count(*)::int as n from usage_events where end_user_id = $1', [
      session.endUserId,
    ]);
    expect(usage?.n).toBe(1);
    const after = await wallet(testEnv, session.walletId);
    expect(unitsOf(after.balance)).toBeGreaterThan(0n);
    expect(unitsOf(after.balance)).toBeLessThan(unitsOf('0.10000000'));
    expect(await reconciled()).toBe(true);
    // And the next call leases again from what is left.
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
  });

  it('a debit racing calls of the same wallet is written: calls wait for it instead of leasing the money back first', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const gateway = gatewayWith({ upstreamFetch: fakeUpstream(() => jsonResponse(openAiCompletion('Hi', reported))).fetch });
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    const debit = call(api(), testEnv, `/v1/admin/wallets/${session.walletId}/adjustments`, {
      json: { kind: 'adjustment', direction: 'debit', amount_usd: '0.90000000', reason: 'test: debit racing calls' },
      token: adminToken,
    });
    const racing = Promise.all(Array.from({ length: 8 }, () => chat(gateway, testEnv, session.token, body)));
    const [debited, calls] = await Promise.all([debit, racing]);
    expect(debited.status).toBe(201);
    expect(calls.every((response) => response.status === 200 || response.status === 402)).toBe(true);
    await objectOf(session.token).flush();
    expect(unitsOf((await wallet(testEnv, session.walletId)).balance)).toBeGreaterThanOrEqual(0n);
    expect(await reconciled()).toBe(true);
  });

  it('a call arriving while a recall gives the lease back waits for the debit: the object never keeps a call its lease in Postgres does not cover', async () => {
    const { session, upstream, gateway, object } = await leasedWallet();
    // The release statement is slow (a long way to Postgres): a call comes in while it runs. Before
    // the fix the object authorized it on the lease in memory, which the release then gave back.
    const { racing } = await withSlowRelease(async () => {
      const recalling = object.recall();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const racing = chat(gateway, testEnv, session.token, body);
      const recalled = await recalling;
      // Given back whole, and nothing kept that it does not cover (a debit may now take every cent).
      expect(await leaseOf(session.token)).toMatchObject({ amount: '0.00000000', status: 'released' });
      expect(recalled).toMatchObject({ inFlight: 0, unflushed: 0, committedUsd: '0.00000000' });
      // Still waiting (not unwrapped here): it is served once the debit says it is written.
      return { racing };
    });
    // The debit is written: the waiting call renews the lease and is served.
    await object.resume();
    expect((await racing).status).toBe(200);
    await object.flush();
    const [usage] = await sql<{ n: number }>(testEnv, 'select count(*)::int as n from usage_events where end_user_id = $1', [
      session.endUserId,
    ]);
    expect(usage?.n).toBe(2);
    expect(upstream.requests).toHaveLength(2);
    await expectBooksAgree(testEnv, upstream.requests);
  });

  it('a call arriving while an idle object gives its lease back waits for it, then renews: nothing kept uncovered', async () => {
    const { session, upstream, gateway, object } = await leasedWallet();
    // Two minutes without a call: the next alarm gives the lease back.
    await runInDurableObject(object, async (instance) => {
      (instance as unknown as { state: { meta: { lastActivity: number } } }).state.meta.lastActivity = Date.now() - 600_000;
    });
    await withSlowRelease(async () => {
      const releasing = runDurableObjectAlarm(object);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const racing = chat(gateway, testEnv, session.token, body);
      await releasing;
      expect((await racing).status).toBe(200);
    });
    // Whatever the object keeps, its lease in Postgres covers.
    const snapshot = await object.snapshot();
    const lease = await leaseOf(session.token);
    expect(snapshot.unflushed + snapshot.inFlight).toBeGreaterThan(0);
    expect(lease?.status).toBe('active');
    expect(unitsOf(lease?.amount ?? '0')).toBeGreaterThanOrEqual(unitsOf(snapshot.committedUsd));
    await object.flush();
    expect(upstream.requests).toHaveLength(2);
    await expectBooksAgree(testEnv, upstream.requests);
  });

  it('the attacker spends on the lease, has the top-up refunded, and calls again: the refund recalls the lease, so the next call is refused and every call paid upstream is booked', async () => {
    const checkout = await paidCheckout(testEnv, '2.00000000');
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('Hi', reported)));
    const gateway = gatewayWith({ upstreamFetch: upstream.fetch });
    expect((await chat(gateway, testEnv, checkout.token, body)).status).toBe(200);
    expect(unitsOf((await objectOf(checkout.token).snapshot()).leaseUsd)).toBeGreaterThan(0n);
    const refunded = await deliver(
      testEnv,
      chargeRefundedEvent({
        id: checkout.chargeId,
        payment_intent: checkout.paymentIntentId,
        amount: checkout.amountCents,
        amount_refunded: checkout.amountCents,
      }),
    );
    expect(refunded.body).toMatchObject({ outcome: 'refund_booked' });
    // Without the recall the object would still hold its lease and serve this call.
    expect((await objectOf(checkout.token).snapshot()).leaseUsd).toBe('0.00000000');
    expect((await chat(gateway, testEnv, checkout.token, body)).status).toBe(402);
    expect(upstream.requests).toHaveLength(1);
    await expectBooksAgree(testEnv, upstream.requests);
  });

  it('a top-up is spendable by the very next call', async () => {
    const session = await fundedSession(testEnv, '0.00010000');
    const gateway = gatewayWith({ upstreamFetch: fakeUpstream(() => jsonResponse(openAiCompletion('Hi', reported))).fetch });
    const big = { ...body, max_tokens: 4000 };
    expect((await chat(gateway, testEnv, session.token, big)).status).toBe(402);
    await fund(testEnv, session.walletId, '1.00000000');
    expect((await chat(gateway, testEnv, session.token, big)).status).toBe(200);
  });
});

describe('a call its gateway never settled', () => {
  it('is booked at its bound, estimated, once its deadline and grace have passed', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const callId = crypto.randomUUID();
    // What the gateway asks before it calls the upstream; then its isolate dies: no settle ever comes.
    const decision = await authorizeOnly(testEnv, session.token, { id: callId, clientRequestId: 'req_never_settled' });
    expect(decision.outcome).toBe('authorized');
    // Time passes: the call's deadline and grace are behind it.
    await sweepCallNow(session.token, callId);
    const [usage] = await sql<{ estimated: boolean; input_tokens: number; output_tokens: number; n: string }>(
      testEnv,
      'select estimated, input_tokens, output_tokens, count(*) over () as n from usage_events where call_id = $1',
      [callId],
    );
    expect(usage).toMatchObject({ estimated: true, input_tokens: 100, output_tokens: 500, n: '1' });
    // A settlement arriving after the sweep changes nothing.
    await objectOf(session.token).settle(callId, { booking: {}, retailUsd: '0.00000001' });
    expect((await objectOf(session.token).flush()).unflushed).toBe(0);
    expect(await reconciled()).toBe(true);
  });
});
