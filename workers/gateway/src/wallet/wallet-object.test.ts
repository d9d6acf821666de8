/**
 * Issue 19: platform calls authorized by the end user's wallet object on its lease, with no Postgres
 * round trip; settlements kept in the object and flushed in batches, each booked exactly once.
 * Written as the attacker and as the outage: concurrent calls past the balance, a database gone
 * while calls go on, a flush that fails half-way, an object restarted with settlements unflushed,
 * a session revoked while the object has it cached, a token pointing at another user's wallet.
 */
import { env as workerEnv, runInDurableObject } from 'cloudflare:test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walletOfToken } from '#shared/auth/session-token.ts';
import type { WalletObjectContract } from '#shared/durable-objects.ts';
import type { Env } from '#shared/env.ts';
import { auditUpstreamCalls } from '#shared/calls/upstream-audit.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion, type RecordedRequest } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayWith, newRequestId, userMessage, wallet } from '../../../test/gateway-kit.ts';
import { openLedgerDatabase } from '../../../test/ledger-kit.ts';

const WALLET = (workerEnv as unknown as Env).WALLET as DurableObjectNamespace<WalletObjectContract>;

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', WALLET_LEASES: 'on' });
});

const reported = { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 };
const body = { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('Tell me something')], max_tokens: 50 };

function upstream() {
  return fakeUpstream(() => jsonResponse(openAiCompletion('Hello', reported)));
}

function objectOf(token: string) {
  const name = walletOfToken(token);
  if (name === null) throw new Error('the session token names no wallet');
  return WALLET.get(WALLET.idFromName(name));
}

async function ledgerChecks(requests: RecordedRequest[]) {
  const database = openLedgerDatabase(testEnv, 2);
  try {
    const audit = await auditUpstreamCalls(
      database.db,
      requests.map((request) => ({
        callId: request.headers['x-client-request-id'] as string,
        inputTokens: reported.prompt_tokens,
        outputTokens: reported.completion_tokens,
      })),
    );
    const reconciliation = await reconcileLedger(database.db);
    return { audit, reconciliation };
  } finally {
    await database.close();
  }
}

const countOf = async (query: string, params: unknown[]) => Number((await sql<{ n: string }>(testEnv, query, params))[0]?.n);

describe('a call the lease covers', () => {
  it('is served, charged in its answer, and booked by the flush exactly once', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const first = await chat(gateway, testEnv, session.token, body);
    expect(first.status).toBe(200);
    const answer = (await first.json()) as { faucet: { charge: { amount_usd: string } } };
    expect(Number(answer.faucet.charge.amount_usd)).toBeGreaterThan(0);

    // The object keeps the settlement; Postgres has the lease, not yet the booking.
    const object = objectOf(session.token);
    const before = await object.snapshot();
    expect(before.unflushed).toBe(1);
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(0);
    const [lease] = await sql<{ amount: string; status: string }>(
      testEnv,
      `select amount::text, status from balance_holds where request_id like 'lease:%' and wallet_id = $1`,
      [session.walletId],
    );
    expect(lease?.status).toBe('active');

    const after = await object.flush();
    expect(after.unflushed).toBe(0);
    const [usage] = await sql<{ retail_usd: string; n: string }>(
      testEnv,
      'select retail_usd::text, count(*) over () as n from usage_events where end_user_id = $1',
      [session.endUserId],
    );
    expect(usage?.retail_usd).toBe(answer.faucet.charge.amount_usd);
    expect(
      await countOf(`select count(*) as n from gateway_calls where end_user_id = $1 and status = 'settled'`, [session.endUserId]),
    ).toBe(1);
    // The balance paid the charge; the lease still reserves its chunk.
    const balances = await wallet(testEnv, session.walletId);
    expect(balances.balance).toBe((1 - Number(answer.faucet.charge.amount_usd)).toFixed(8));

    // A second flush books nothing again.
    await object.flush();
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(1);
    const checks = await ledgerChecks(fake.requests);
    expect(checks.audit.ok).toBe(true);
    expect(checks.reconciliation.ok).toBe(true);
  });

  it('goes on with Postgres unreachable once the lease is held, and every call is booked once when it is back', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    const object = objectOf(session.token);
    await object.flush();

    // The outage: the object's two statements fail as if the database were gone.
    await sql(testEnv, 'alter function faucet_settle_lease rename to faucet_settle_lease_gone');
    await sql(testEnv, 'alter function faucet_lease_context rename to faucet_lease_context_gone');
    try {
      for (let index = 0; index < 5; index++) {
        const response = await chat(gateway, testEnv, session.token, body);
        expect(response.status).toBe(200);
      }
      // Function missing: SQLSTATE 42883; nothing written, the five kept.
      expect(await object.flush()).toMatchObject({ error: '42883', unflushed: 5 });
    } finally {
      await sql(testEnv, 'alter function faucet_settle_lease_gone rename to faucet_settle_lease');
      await sql(testEnv, 'alter function faucet_lease_context_gone rename to faucet_lease_context');
    }
    await object.flush();
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(6);
    const checks = await ledgerChecks(fake.requests);
    expect(checks.audit).toMatchObject({ ok: true, unbilledCalls: 0, doubleBilledCalls: 0 });
    expect(checks.reconciliation.ok).toBe(true);
  });

  it('a flush that fails half-way writes nothing; the retry books each call once', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    for (let index = 0; index < 4; index++) expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    const object = objectOf(session.token);
    // A fault on this user's third usage record (after two were written by the same statement).
    await sql(
      testEnv,
      `create or replace function test_fail_third() returns trigger language plpgsql as $$
       begin
         if new.end_user_id = '${session.endUserId}'::uuid
            and (select count(*) from usage_events where end_user_id = new.end_user_id) >= 2 then
           raise exception 'injected fault' using errcode = 'XX000';
         end if;
         return new;
       end $$`,
    );
    await sql(testEnv, 'create trigger test_fail_third before insert on usage_events for each row execute function test_fail_third()');
    try {
      expect(await object.flush()).toMatchObject({ error: 'XX000', unflushed: 4 });
      expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(0);
      expect(await countOf('select count(*) as n from gateway_calls where end_user_id = $1', [session.endUserId])).toBe(0);
    } finally {
      await sql(testEnv, 'drop trigger test_fail_third on usage_events');
    }
    await object.flush();
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(4);
    const checks = await ledgerChecks(fake.requests);
    expect(checks.audit).toMatchObject({ ok: true, unbilledCalls: 0, doubleBilledCalls: 0 });
    expect(checks.reconciliation.ok).toBe(true);
  });

  it('settlements survive a restart of the object and are booked once', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    for (let index = 0; index < 3; index++) expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    const object = objectOf(session.token);
    // Evict the object: its memory is gone; a new instance loads its storage (blockConcurrencyWhile).
    await runInDurableObject(object, async (_instance, state) => {
      state.abort('test restart');
    }).catch(() => undefined);
    const restarted = objectOf(session.token);
    expect((await restarted.snapshot()).unflushed).toBe(3);
    // A call after the restart is covered by the lease the storage kept.
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    await restarted.flush();
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(4);
    const checks = await ledgerChecks(fake.requests);
    expect(checks.audit).toMatchObject({ ok: true, unbilledCalls: 0, doubleBilledCalls: 0 });
    expect(checks.reconciliation.ok).toBe(true);
  });
});

describe('the attacker', () => {
  it('concurrent calls past the balance: those the lease cannot cover are refused, the wallet never goes below zero', async () => {
    const session = await fundedSession(testEnv, '0.01000000');
    // Every call stays in flight until all 30 were asked: each holds its worst case at once.
    const fake = fakeUpstream(async () => {
      await new Promise((resolve) => setTimeout(resolve, 500));
      return jsonResponse(openAiCompletion('Hello', reported));
    });
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => chat(gateway, testEnv, session.token, { ...body, max_tokens: 2000 })),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status === 402).length).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 200 || status === 402)).toBe(true);
    await objectOf(session.token).flush();
    const balances = await wallet(testEnv, session.walletId);
    expect(Number(balances.balance)).toBeGreaterThanOrEqual(0);
    expect(await countOf(`select count(*) as n from usage_events where end_user_id = $1 and receivable_usd > 0`, [session.endUserId])).toBe(
      0,
    );
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(fake.requests.length);
    const checks = await ledgerChecks(fake.requests);
    expect(checks.audit).toMatchObject({ ok: true, unbilledCalls: 0, doubleBilledCalls: 0 });
    expect(checks.reconciliation.ok).toBe(true);
  });

  it('a reused x-request-id is refused by the object, with nothing sent upstream', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const requestId = newRequestId();
    expect((await chat(gateway, testEnv, session.token, body, requestId)).status).toBe(200);
    const replay = await chat(gateway, testEnv, session.token, body, requestId);
    expect(replay.status).toBe(409);
    expect(fake.requests).toHaveLength(1);
  });

  it('a token whose wallet part names another user is refused', async () => {
    const victim = await fundedSession(testEnv, '1.00000000');
    const attacker = await fundedSession(testEnv, '0.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    // The attacker's own secret part, the victim's wallet part: routed to the victim's object.
    const forged = `fvs_w${walletOfToken(victim.token)}_${attacker.token.slice(-43)}`;
    const response = await chat(gateway, testEnv, forged, body);
    expect(response.status).toBe(401);
    expect(fake.requests).toHaveLength(0);
  });

  it('a session revoked by its developer is refused at once, though the object had it cached', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    const revoked = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/sessions/${session.sessionId}/revoke`, {
      method: 'POST',
      token: developerKey,
    });
    expect(revoked.status).toBeLessThan(300);
    const after = await chat(gateway, testEnv, session.token, body);
    expect(after.status).toBe(401);
    expect(fake.requests).toHaveLength(1);
  });
});

afterAll(async () => {
  // Nothing to close: each test's database connections are its own.
});
