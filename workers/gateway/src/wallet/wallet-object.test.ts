/**
 * Platform calls authorized by the end user's wallet object on its lease, with no Postgres
 * round trip; settlements kept in the object and flushed in batches, each booked exactly once.
 * Written as the attacker and as the outage: concurrent calls past the balance, a database gone
 * while calls go on, a flush that fails half-way, an object restarted with settlements unflushed,
 * a session revoked while the object has it cached, a token pointing at another user's wallet (also
 * one whose refused call carried the victim's settlement just before the object died).
 */
import { createExecutionContext, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { walletOfToken } from '#shared/auth/session-token.ts';
import type { WalletObjectContract } from '#shared/durable-objects.ts';
import type { Env } from '#shared/env.ts';
import { adminToken, api, call, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiChunk, openAiCompletion, openAiSse, sseResponse } from '../../../test/fake-upstream.ts';
import { createDatabase, observeStatements } from '#shared/db.ts';
import { chat, fundedSession, gatewayWith, newRequestId, sseData, wallet } from '../../../test/gateway-kit.ts';
import {
  answeringUpstream,
  expectBooksAgree,
  leasedTestEnv,
  platformCall,
  reportedUsage,
  unitsOf,
  usdMinus,
  sweepCallNow,
  walletObjectOf,
} from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await leasedTestEnv();
});

const reported = reportedUsage;
const body = platformCall;

const upstream = answeringUpstream;
const objectOf = walletObjectOf;

const countOf = async (query: string, params: unknown[]) => Number((await sql<{ n: string }>(testEnv, query, params))[0]?.n);

/** An end user's one settled call: held unflushed by their object at `charged`, then booked once at it. */
async function expectOneCallBookedAt(token: string, endUserId: string, charged: string): Promise<void> {
  const object = objectOf(token);
  expect(await object.snapshot()).toMatchObject({ inFlight: 0, unflushed: 1, unflushedUsd: charged });
  await object.flush();
  const booked = await sql<{ retail_usd: string }>(testEnv, 'select retail_usd::text from usage_events where end_user_id = $1', [
    endUserId,
  ]);
  expect(booked).toEqual([{ retail_usd: charged }]);
}

describe('a call the lease covers', () => {
  it('is served, charged in its answer, and booked by the flush exactly once', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const first = await chat(gateway, testEnv, session.token, body);
    expect(first.status).toBe(200);
    const answer = (await first.json()) as { faucet: { charge: { amount_usd: string } } };
    expect(unitsOf(answer.faucet.charge.amount_usd)).toBeGreaterThan(0n);

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
    expect(balances.balance).toBe(usdMinus('1.00000000', answer.faucet.charge.amount_usd));

    // A second flush books nothing again.
    await object.flush();
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(1);
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('answers with its charge without waiting for the object to write the settlement, which follows and is booked once', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    let deliver: () => void = () => undefined;
    const delivered = new Promise<void>((resolve) => (deliver = resolve));
    const ctx = createExecutionContext();
    const answering = gateway.fetch(platformCallRequest(session.token), withSettlementsAfter(delivered), ctx);
    // The settlement is held on its way to the object; the answer does not wait for it.
    const first = await Promise.race([answering, scheduler.wait(3000).then(() => null)]);
    expect(first?.status).toBe(200);
    const answer = (await first?.json()) as { faucet: { charge: { amount_usd: string } } };
    expect(unitsOf(answer.faucet.charge.amount_usd)).toBeGreaterThan(0n);
    const object = objectOf(session.token);
    // Meanwhile the object keeps the call in flight at its worst case: never less than the charge.
    const meanwhile = await object.snapshot();
    expect(meanwhile).toMatchObject({ inFlight: 1, unflushed: 0 });
    expect(unitsOf(meanwhile.committedUsd)).toBeGreaterThanOrEqual(unitsOf(answer.faucet.charge.amount_usd));

    deliver();
    await waitOnExecutionContext(ctx);
    expect(await object.snapshot()).toMatchObject({ inFlight: 0, unflushed: 1, unflushedUsd: answer.faucet.charge.amount_usd });
    await object.flush();
    const booked = await sql<{ retail_usd: string }>(testEnv, 'select retail_usd::text from usage_events where end_user_id = $1', [
      session.endUserId,
    ]);
    expect(booked).toEqual([{ retail_usd: answer.faucet.charge.amount_usd }]);
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('sends the settlement only once the answer has left, so the object taking it never delays the answer', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const events: string[] = [];
    const ctx = createExecutionContext();
    const answered = await gateway.fetch(
      platformCallRequest(session.token),
      withSettlementsThrough(async () => void events.push('settlement sent')),
      ctx,
    );
    events.push('answered');
    expect(answered.status).toBe(200);
    const charged = ((await answered.json()) as { faucet: { charge: { amount_usd: string } } }).faucet.charge.amount_usd;
    await waitOnExecutionContext(ctx);
    expect(events).toEqual(['answered', 'settlement sent']);
    const object = objectOf(session.token);
    expect(await object.snapshot()).toMatchObject({ inFlight: 0, unflushed: 1, unflushedUsd: charged });
    await object.flush();
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('a call sent the moment the previous answer arrives finds that call settled: no renewal, no refusal for its worst case', async () => {
    // The worst case a call holds in flight, and its real charge, from a call whose settlement is held.
    const probe = await fundedSession(testEnv, '1.00000000');
    let release: () => void = () => undefined;
    const probeCtx = createExecutionContext();
    const probed = await gatewayWith({ upstreamFetch: upstream().fetch }).fetch(
      platformCallRequest(probe.token),
      withSettlementsAfter(new Promise<void>((resolve) => (release = resolve))),
      probeCtx,
    );
    const charge = unitsOf(((await probed.json()) as { faucet: { charge: { amount_usd: string } } }).faucet.charge.amount_usd);
    const worst = unitsOf((await objectOf(probe.token).snapshot()).committedUsd);
    release();
    await waitOnExecutionContext(probeCtx);
    expect(charge * 2n).toBeLessThan(worst);

    // A balance that covers one worst case and a charge, never two worst cases at once.
    const funded = worst + worst / 2n;
    const session = await fundedSession(testEnv, `${funded / 100_000_000n}.${String(funded % 100_000_000n).padStart(8, '0')}`);
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const send = (ctx: ExecutionContext) => gateway.fetch(platformCallRequest(session.token), testEnv, ctx);
    const firstCtx = createExecutionContext();
    const first = await send(firstCtx);
    expect(first.status).toBe(200);
    // At once: the first call's settlement is sent after its answer, so it may still be on its way.
    const secondCtx = createExecutionContext();
    const second = await send(secondCtx);
    expect(second.status).toBe(200);
    await waitOnExecutionContext(firstCtx);
    await waitOnExecutionContext(secondCtx);
    // The object's one statement opened the lease; the second call needed no renewal: this isolate
    // sent the first call's settlement ahead of the second's authorize (wallet/unsent-settlements.ts).
    expect((await objectOf(session.token).snapshot()).statements).toBe(1);
    await objectOf(session.token).flush();
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(2);
    await expectBooksAgree(testEnv, [...fake.requests]);
  });

  it('a settlement lost on its way: the answer is served and the call is booked at its bound once its deadline passes, never unbooked', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const lost = Promise.reject(new Error('the settlement never reached the object'));
    lost.catch(() => undefined);
    const answered = await call(gateway, withSettlementsAfter(lost), '/v1/chat/completions', { json: body, token: session.token });
    expect(answered.status).toBe(200);
    const charged = ((await answered.json()) as { faucet: { charge: { amount_usd: string } } }).faucet.charge.amount_usd;
    const callId = answered.headers.get('x-faucet-call-id') as string;
    const object = objectOf(session.token);
    expect(await object.snapshot()).toMatchObject({ inFlight: 1, unflushed: 0 });
    // Time passes: the call's deadline and grace are behind it; the object's alarm sweeps it.
    await sweepCallNow(session.token, callId);
    const [booked] = await sql<{ retail_usd: string; estimated: boolean; n: string }>(
      testEnv,
      'select retail_usd::text, estimated, count(*) over () as n from usage_events where call_id = $1',
      [callId],
    );
    expect(booked).toMatchObject({ estimated: true, n: '1' });
    expect(unitsOf(booked!.retail_usd)).toBeGreaterThanOrEqual(unitsOf(charged));
    await expectBooksAgree(testEnv, fake.requests);
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
    await expectBooksAgree(testEnv, fake.requests);
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
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('settlements survive a restart of the object and are booked once, also those that waited to share a write', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    // Two calls at once (a settlement written with the other's authorization or beside the other's
    // settlement), then one alone (its settlement written on its own): each answered once durable.
    const together = await Promise.all([chat(gateway, testEnv, session.token, body), chat(gateway, testEnv, session.token, body)]);
    expect(together.map((response) => response.status)).toEqual([200, 200]);
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
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
    await expectBooksAgree(testEnv, fake.requests);
  });
});

describe('the operator', () => {
  it('reconciliation counts what objects hold unflushed, and the flush endpoint books it', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    for (let index = 0; index < 2; index++) expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    const report = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
    const books = (await report.json()) as {
      ok: boolean;
      wallet_objects: { unflushed_calls: number; unflushed_usd: string; unreachable: number };
    };
    expect(books.ok).toBe(true);
    expect(books.wallet_objects.unflushed_calls).toBeGreaterThanOrEqual(2);
    expect(unitsOf(books.wallet_objects.unflushed_usd)).toBeGreaterThan(0n);
    const flushed = await call(api(), testEnv, '/v1/admin/wallets/flush', { method: 'POST', token: adminToken });
    expect(await flushed.json()).toMatchObject({ unflushed_calls: 0, unreachable: 0 });
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(2);
    expect((await call(api(), testEnv, '/v1/admin/wallets/flush', { method: 'POST' })).status).toBe(401);
  });
});

describe('an object whose lease has ended', () => {
  it('is still asked by reconciliation and the flush while it keeps calls; a settlement the ledger refuses is counted, never dropped', async () => {
    const flushAll = async () =>
      (await (await call(api(), testEnv, '/v1/admin/wallets/flush', { method: 'POST', token: adminToken })).json()) as {
        unflushed_calls: number;
        refused_calls: number;
      };
    await flushAll();
    const session = await fundedSession(testEnv, '1.00000000');
    const gateway = gatewayWith({ upstreamFetch: upstream().fetch });
    for (let index = 0; index < 2; index++) expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    // Postgres let the lease lapse (the object could not renew it while the database was unreachable).
    await sql(testEnv, `update balance_holds set expires_at = now() - interval '1 second' where request_id = $1`, [
      `lease:${walletOfToken(session.token)}`,
    ]);
    const report = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
    const books = (await report.json()) as { wallet_objects: { unflushed_calls: number; refused_calls: number } };
    expect(books.wallet_objects).toMatchObject({ unflushed_calls: 2, refused_calls: 0 });

    // One settlement arrives malformed (its booking names another end user): the ledger refuses it.
    await runInDurableObject(objectOf(session.token), async (instance) => {
      const { state } = instance as unknown as { state: { calls: Map<string, { state: string; booking: Record<string, unknown> }> } };
      const { calls } = state;
      const settled = [...calls.values()].find((stored) => stored.state === 'settled');
      if (settled === undefined) throw new Error('no settled call');
      settled.booking = { ...settled.booking, end_user_id: crypto.randomUUID() };
    });
    expect(await flushAll()).toMatchObject({ unflushed_calls: 0, refused_calls: 1 });
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(1);
    expect((await objectOf(session.token).snapshot()).refused).toBe(1);
    // Its call's record stays in flight: the sweeper books it at its bound once its deadline passes.
    expect(
      await countOf(`select count(*) as n from gateway_calls where end_user_id = $1 and status = 'in_flight'`, [session.endUserId]),
    ).toBe(1);
  });
});

describe('the end user', () => {
  it('reads their own calls: the wallet and usage they are shown include a call answered a moment ago', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const gateway = gatewayWith({ upstreamFetch: upstream().fetch });
    const answer = (await (await chat(gateway, testEnv, session.token, body)).json()) as { faucet: { charge: { amount_usd: string } } };
    expect((await objectOf(session.token).snapshot()).unflushed).toBe(1);
    const shown = (await (await call(api(), testEnv, '/v1/user/wallet', { token: session.token })).json()) as { balance_usd: string };
    expect(shown.balance_usd).toBe(usdMinus('1.00000000', answer.faucet.charge.amount_usd));
    const usage = (await (await call(api(), testEnv, '/v1/user/usage', { token: session.token })).json()) as { data: unknown[] };
    expect(usage.data).toHaveLength(1);
  });
});

describe('round trips', () => {
  it('a covered call makes no Postgres statement on the gateway side, nor opens a pool, and none in the object before the upstream', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    let statements = 0;
    let pools = 0;
    const counting = (env: Env) => {
      pools++;
      return observeStatements(createDatabase(env), (run) => {
        statements++;
        return run();
      });
    };
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch, openDatabase: counting });
    // The first call of a cold wallet: the object reads the session and takes its lease.
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    // Warm: the object's two statements are taken away; the call is still served and charged.
    await sql(testEnv, 'alter function faucet_lease_context rename to faucet_lease_context_away');
    await sql(testEnv, 'alter function faucet_settle_lease rename to faucet_settle_lease_away');
    try {
      const warm = await chat(gateway, testEnv, session.token, body);
      expect(warm.status).toBe(200);
    } finally {
      await sql(testEnv, 'alter function faucet_lease_context_away rename to faucet_lease_context');
      await sql(testEnv, 'alter function faucet_settle_lease_away rename to faucet_settle_lease');
    }
    expect(statements).toBe(0);
    expect(pools).toBe(0);
    await objectOf(session.token).flush();
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('the first call of a new end user reads the session and takes the lease in one statement; the next calls in none', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const gateway = gatewayWith({ upstreamFetch: upstream().fetch });
    const object = objectOf(session.token);
    expect((await object.snapshot()).statements).toBe(0);
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    expect((await object.snapshot()).statements).toBe(1);
    for (let index = 0; index < 3; index++) expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    expect((await object.snapshot()).statements).toBe(1);
    await object.flush();
    expect((await object.snapshot()).statements).toBe(2);
  });

  it('a streamed call is settled in the object after its last chunk and booked by the flush', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const fake = fakeUpstream(() =>
      sseResponse(openAiSse([openAiChunk({ content: 'Hel' }), openAiChunk({ content: 'lo' }, 'stop'), openAiChunk({}, null, reported)])),
    );
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const response = await chat(gateway, testEnv, session.token, { ...body, stream: true, stream_options: { include_usage: true } });
    expect(response.status).toBe(200);
    const events = sseData(await response.text());
    expect(events.at(-1)).toBe('[DONE]');
    const object = objectOf(session.token);
    expect((await object.snapshot()).unflushed).toBe(1);
    await object.flush();
    const [usage] = await sql<{ input_tokens: number; output_tokens: number }>(
      testEnv,
      'select input_tokens, output_tokens from usage_events where end_user_id = $1',
      [session.endUserId],
    );
    expect(usage).toEqual({ input_tokens: 12, output_tokens: 9 });
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('warm calls do not read the alarm from storage, and a call after the alarm fired sets it again', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const gateway = gatewayWith({ upstreamFetch: upstream().fetch });
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    const object = objectOf(session.token);
    let alarmReads = 0;
    await runInDurableObject(object, async (_instance, state) => {
      const getAlarm = state.storage.getAlarm.bind(state.storage);
      state.storage.getAlarm = (options) => {
        alarmReads++;
        return getAlarm(options);
      };
    });
    for (let index = 0; index < 3; index++) expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    expect(alarmReads).toBe(0);
    // The alarm flushes the four calls; the next call's settlement must still get an alarm to flush it.
    expect(await runDurableObjectAlarm(object)).toBe(true);
    expect((await object.snapshot()).unflushed).toBe(0);
    expect((await chat(gateway, testEnv, session.token, body)).status).toBe(200);
    expect((await object.snapshot()).unflushed).toBe(1);
    expect(await runInDurableObject(object, (_instance, state) => state.storage.getAlarm())).not.toBeNull();
    expect(await runDurableObjectAlarm(object)).toBe(true);
    expect((await object.snapshot()).unflushed).toBe(0);
  });
});

describe('the attacker', () => {
  it('concurrent calls past the balance: those the lease cannot cover are refused, the wallet never goes below zero', async () => {
    const session = await fundedSession(testEnv, '0.01000000');
    // Every admitted call stays in flight until no call has reached the upstream for a second: each
    // holds its worst case at once, however slowly the machine admits them.
    let lastArrival = Date.now();
    const fake = fakeUpstream(async () => {
      lastArrival = Date.now();
      while (Date.now() - lastArrival < 1000) await new Promise((resolve) => setTimeout(resolve, 50));
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
    expect(unitsOf(balances.balance)).toBeGreaterThanOrEqual(0n);
    expect(await countOf(`select count(*) as n from usage_events where end_user_id = $1 and receivable_usd > 0`, [session.endUserId])).toBe(
      0,
    );
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [session.endUserId])).toBe(fake.requests.length);
    await expectBooksAgree(testEnv, fake.requests);
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

    // Still refused by a restarted object: while the call is kept (its record carries the claim)...
    const restart = async () =>
      runInDurableObject(objectOf(session.token), async (_instance, state) => {
        state.abort('test restart');
      }).catch(() => undefined);
    await restart();
    expect((await objectOf(session.token).snapshot()).unflushed).toBe(1);
    expect((await chat(gateway, testEnv, session.token, body, requestId)).status).toBe(409);
    // ...and after it was flushed and left the object's storage (the claim is kept on its own).
    await objectOf(session.token).flush();
    await restart();
    expect((await objectOf(session.token).snapshot()).unflushed).toBe(0);
    expect((await chat(gateway, testEnv, session.token, body, requestId)).status).toBe(409);
    expect(fake.requests).toHaveLength(1);
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('a token whose wallet part names another user is refused', async () => {
    const victim = await fundedSession(testEnv, '1.00000000');
    const attacker = await fundedSession(testEnv, '0.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    // The victim's object has checked its own end user already (and remembers that match).
    expect((await chat(gateway, testEnv, victim.token, body)).status).toBe(200);
    // The attacker's own secret part, the victim's wallet part: routed to the victim's object.
    const forged = `fvs_w${walletOfToken(victim.token)}_${attacker.token.slice(-43)}`;
    const response = await chat(gateway, testEnv, forged, body);
    expect(response.status).toBe(401);
    expect(fake.requests).toHaveLength(1);
    expect((await chat(gateway, testEnv, forged, body)).status).toBe(401);
    expect(fake.requests).toHaveLength(1);
    // Nothing was leased under the victim's object for the attacker's wallet, and the victim's calls go on.
    expect(
      await countOf(`select count(*) as n from balance_holds where request_id like 'lease:%' and wallet_id = $1`, [attacker.walletId]),
    ).toBe(0);
    expect((await chat(gateway, testEnv, victim.token, body)).status).toBe(200);
  });

  it("a forged token sent while the victim's settlement is still unsent is refused; the victim's call is booked once, at its charge", async () => {
    const victim = await fundedSession(testEnv, '1.00000000');
    const attacker = await fundedSession(testEnv, '0.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const ctx = createExecutionContext();
    const answered = await gateway.fetch(platformCallRequest(victim.token), testEnv, ctx);
    expect(answered.status).toBe(200);
    const charged = ((await answered.json()) as { faucet: { charge: { amount_usd: string } } }).faucet.charge.amount_usd;
    // At once, before the victim's settlement has left: the forged call takes it from this isolate
    // and sends it to the victim's own object, then is refused there.
    const forged = `fvs_w${walletOfToken(victim.token)}_${attacker.token.slice(-43)}`;
    expect((await chat(gateway, testEnv, forged, body)).status).toBe(401);
    await waitOnExecutionContext(ctx);
    expect(fake.requests).toHaveLength(1);
    await expectOneCallBookedAt(victim.token, victim.endUserId, charged);
    expect(await countOf('select count(*) as n from usage_events where end_user_id = $1', [attacker.endUserId])).toBe(0);
    await expectBooksAgree(testEnv, fake.requests);
  });

  it('a settlement carried by a refused authorize is durable before the refusal is answered: the object restarted at once still has it', async () => {
    const victim = await fundedSession(testEnv, '1.00000000');
    const attacker = await fundedSession(testEnv, '0.00000000');
    const fake = upstream();
    const gateway = gatewayWith({ upstreamFetch: fake.fetch });
    const forged = `fvs_w${walletOfToken(victim.token)}_${attacker.token.slice(-43)}`;
    // Refused once, so the object has the forged session's context and refuses it next without a statement.
    expect((await chat(gateway, testEnv, forged, body)).status).toBe(401);
    const ctx = createExecutionContext();
    const answered = await gateway.fetch(platformCallRequest(victim.token), testEnv, ctx);
    expect(answered.status).toBe(200);
    const charged = ((await answered.json()) as { faucet: { charge: { amount_usd: string } } }).faucet.charge.amount_usd;
    // The forged call carries the victim's settlement and is refused without a write of its own;
    // the object dies before its own timer (settlementGraceMs) would have written what it took.
    expect((await chat(gateway, testEnv, forged, body)).status).toBe(401);
    await runInDurableObject(objectOf(victim.token), (_instance, state) => state.abort('crash right after the refusal')).catch(
      () => undefined,
    );
    await waitOnExecutionContext(ctx);
    // The only copy of the settlement was the one carried: nothing else sends it.
    await expectOneCallBookedAt(victim.token, victim.endUserId, charged);
    await expectBooksAgree(testEnv, fake.requests);
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

/** The leased platform call (`body`) as a request of `token`, for a test that runs the gateway with its own execution context. */
function platformCallRequest(token: string): Request {
  return new Request('http://faucet.test/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': newRequestId() },
    body: JSON.stringify(body),
  });
}

/** The test env with every wallet object's `settle` held on its way until `delivered` settles (lost if it rejects). */
function withSettlementsAfter(delivered: Promise<void>): TestEnv {
  return withSettlementsThrough(() => delivered);
}

/** The test env with every wallet object's `settle` passing through `onTheWay` (held until it settles; lost if it rejects). */
function withSettlementsThrough(onTheWay: () => Promise<void>): TestEnv {
  const objects = testEnv.WALLET as DurableObjectNamespace<WalletObjectContract>;
  const held = {
    idFromName: (name: string) => objects.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = objects.get(id);
      return {
        authorize: (request: Parameters<WalletObjectContract['authorize']>[0]) => stub.authorize(request),
        abandon: (callId: string) => stub.abandon(callId),
        settle: async (...args: Parameters<WalletObjectContract['settle']>) => {
          await onTheWay();
          return stub.settle(...args);
        },
      };
    },
  };
  return { ...testEnv, WALLET: held as unknown as Env['WALLET'] };
}
