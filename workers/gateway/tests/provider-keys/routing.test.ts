/**
 * Stored keys on the gateway's route (DESIGN §6), end to end in the Workers runtime: keys created
 * through the control API, calls through the gateway with the upstream intercepted, bookings in the
 * real ledger. The last test searches everything this file produced for the raw keys.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { holdBounds } from '../../src/metering/hold-bounds.ts';
import { parseModel } from '../../src/routing/parse-model.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  chat,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  reservedForCalls,
  settled,
  wallet,
} from '../../../test/gateway-kit.ts';
import { adminToken, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { addUsd, compareUsd, formatUsd, parseDatabaseAmount, parseWireAmount } from '#shared/money/index.ts';
import { rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import { keyringFrom } from '#shared/provider-keys/keyring.ts';
import { openKey } from '#shared/provider-keys/seal.ts';
import { auditRows, dumpAllTables, fakeOpenAiKey, seenBodies, send } from '../../../test/provider-keys-kit.ts';

const poolKey = 'sk-platform-pool-key-for-tests-000000';
let testEnv: TestEnv;
/** Every raw key this file stores, for the final leak search. */
const rawKeys: string[] = [];
const logLines: string[] = [];
const upstream = fakeUpstream((request) => {
  if ((request.body as { messages?: Array<{ content: string }> }).messages?.[0]?.content === 'fail please') {
    return jsonResponse({ error: { message: 'upstream broke' } }, 500);
  }
  return jsonResponse(openAiCompletion('hello from upstream'));
});
const gateway = gatewayWith({ upstreamFetch: upstream.fetch });

beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: poolKey });
  const original = console.log.bind(console);
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    logLines.push(args.map(String).join(' '));
    original(...args);
  });
});
afterAll(() => {
  vi.restoreAllMocks();
});

const hi = { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 7 };

async function callGateway(token: string, body: Record<string, unknown>, requestId = newRequestId(), env: TestEnv = testEnv) {
  const sent = upstream.requests.length;
  const response = await chat(gateway, env, token, body, requestId);
  const text = await response.text();
  seenBodies.push(text);
  const newRequests = upstream.requests.slice(sent);
  return {
    status: response.status,
    body: JSON.parse(text),
    requestId,
    /** The Authorization header the intercepted upstream saw (undefined when it was not called). */
    authorization: newRequests[0]?.headers.authorization,
    upstreamCalls: newRequests.length,
  };
}

async function addUserKey(token: string) {
  const apiKey = fakeOpenAiKey();
  rawKeys.push(apiKey);
  const created = await send(testEnv, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: apiKey }, token });
  expect(created.status).toBe(201);
  return { apiKey, id: created.body.id as string };
}

async function replaceDeveloperKey(monthlyBudgetUsd: string) {
  const listed = await send(testEnv, '/v1/developer/provider-keys', { token: developerKey });
  for (const key of listed.body.data)
    await send(testEnv, `/v1/developer/provider-keys/${key.id}`, { method: 'DELETE', token: developerKey });
  const apiKey = fakeOpenAiKey();
  rawKeys.push(apiKey);
  const created = await send(testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: apiKey, monthly_budget_usd: monthlyBudgetUsd },
    token: developerKey,
  });
  expect(created.status).toBe(201);
  return { apiKey, id: created.body.id as string };
}

async function disableDeveloperKeys() {
  const listed = await send(testEnv, '/v1/developer/provider-keys', { token: developerKey });
  for (const key of listed.body.data)
    await send(testEnv, `/v1/developer/provider-keys/${key.id}`, { method: 'DELETE', token: developerKey });
}

describe('BYOK keys on the gateway', () => {
  it('create → list → call with that key → disable → the next call no longer uses it', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const { apiKey, id } = await addUserKey(session.token);
    const listed = await send(testEnv, '/v1/user/provider-keys', { token: session.token });
    expect(listed.body.data.map((key: { id: string; status: string }) => [key.id, key.status])).toEqual([[id, 'active']]);

    const before = await wallet(testEnv, session.walletId);
    const byok = await callGateway(session.token, { ...hi, route_mode: 'byok' });
    expect(byok.status).toBe(200);
    expect(byok.authorization).toBe(`Bearer ${apiKey}`);
    expect(byok.body.faucet.route_mode).toBe('byok');
    // Rated by the money core: byok carries no upstream cost and only the feature's open fee (0 here).
    expect(byok.body.faucet.charge).toEqual({ currency: 'USD', amount_usd: '0.00000000', upstream_cost_usd: '0.00000000' });
    await settled(testEnv);
    expect(await wallet(testEnv, session.walletId)).toEqual(before);
    const [usage] = await sql<{ route_mode: string; provider_credential_id: string }>(
      testEnv,
      'select route_mode, provider_credential_id from usage_events where client_request_id = $1',
      [byok.requestId],
    );
    expect(usage).toEqual({ route_mode: 'byok', provider_credential_id: id });

    expect((await send(testEnv, `/v1/user/provider-keys/${id}`, { method: 'DELETE', token: session.token })).status).toBe(200);
    const refused = await callGateway(session.token, { ...hi, route_mode: 'byok' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('invalid_request');
    expect(refused.body.error.message).toMatch(/byok/i);
    expect(refused.upstreamCalls).toBe(0);
    await settled(testEnv);
    // Nothing charged (what the lease holds may differ: see the budget refusal below).
    expect((await wallet(testEnv, session.walletId)).balance).toBe(before.balance);

    const platform = await callGateway(session.token, hi);
    expect(platform.status).toBe(200);
    expect(platform.body.faucet.route_mode).toBe('platform');
    expect(platform.authorization).toBe(`Bearer ${poolKey}`);
  });

  it('asking for byok without any key is a clear 400 that never falls back to a paid route', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const before = await wallet(testEnv, session.walletId);
    const response = await callGateway(session.token, { ...hi, route_mode: 'byok' });
    expect(response.status).toBe(400);
    expect(response.upstreamCalls).toBe(0);
    await settled(testEnv);
    expect((await wallet(testEnv, session.walletId)).balance).toBe(before.balance);
  });

  it("uses another user's key never: each call goes out with the caller's own key", async () => {
    const alice = await fundedSession(testEnv, '0.00000000');
    const bob = await fundedSession(testEnv, '0.00000000');
    const aliceKey = await addUserKey(alice.token);
    const bobKey = await addUserKey(bob.token);
    expect((await callGateway(alice.token, { ...hi, route_mode: 'byok' })).authorization).toBe(`Bearer ${aliceKey.apiKey}`);
    expect((await callGateway(bob.token, { ...hi, route_mode: 'byok' })).authorization).toBe(`Bearer ${bobKey.apiKey}`);
  });

  it('a byok_first feature uses the BYOK key without being asked, and the platform pool when the user has none', async () => {
    const [app] = await sql<{ id: string }>(testEnv, `select id from apps where public_app_id = 'app_demo_local'`);
    await sql(
      testEnv,
      `insert into app_features (app_id, feature_key, name, default_model, route_policy)
       values ($1, 'own-keys', 'Own keys first', 'openai:gpt-4o-mini', 'byok_first') on conflict do nothing`,
      [app!.id],
    );
    const withKey = await fundedSession(testEnv, '1.00000000');
    const { apiKey } = await addUserKey(withKey.token);
    const first = await callGateway(withKey.token, { ...hi, feature: 'own-keys' });
    expect(first.body.faucet.route_mode).toBe('byok');
    expect(first.authorization).toBe(`Bearer ${apiKey}`);
    // The same user on a platform_first feature: the platform pool (no developer key exists yet).
    const second = await callGateway(withKey.token, hi);
    expect(second.body.faucet.route_mode).toBe('platform');
    expect(second.authorization).toBe(`Bearer ${poolKey}`);

    const withoutKey = await fundedSession(testEnv, '1.00000000');
    const third = await callGateway(withoutKey.token, { ...hi, feature: 'own-keys' });
    expect(third.body.faucet.route_mode).toBe('platform');
  });
});

describe('developer keys on the gateway', () => {
  it('an active developer key comes before the platform pool and is rated by the developer_key rules', async () => {
    const { apiKey, id } = await replaceDeveloperKey('10.00000000');
    const session = await fundedSession(testEnv, '1.00000000');
    const response = await callGateway(session.token, hi);
    expect(response.status).toBe(200);
    expect(response.authorization).toBe(`Bearer ${apiKey}`);
    const rated = rateUsage(
      { routeMode: 'developer_key', provider: 'openai', model: 'gpt-4o-mini', inputTokens: 11, outputTokens: 7, estimated: false },
      {},
      ratingSettingsFor(testEnv, 5000),
    );
    expect(response.body.faucet).toMatchObject({
      route_mode: 'developer_key',
      charge: { currency: 'USD', amount_usd: formatUsd(rated.retailUsd), upstream_cost_usd: formatUsd(rated.upstreamCostUsd) },
    });
    await settled(testEnv);
    const listed = await send(testEnv, '/v1/developer/provider-keys', { token: developerKey });
    expect(listed.body.data[0]).toMatchObject({ id, spent_this_month_usd: formatUsd(rated.upstreamCostUsd) });

    // route_mode "platform" skips the developer key; a disabled key is never used again.
    expect((await callGateway(session.token, { ...hi, route_mode: 'platform' })).authorization).toBe(`Bearer ${poolKey}`);
    await disableDeveloperKeys();
    const after = await callGateway(session.token, hi);
    expect(after.body.faucet.route_mode).toBe('platform');
    expect(after.authorization).toBe(`Bearer ${poolKey}`);
    const explicit = await callGateway(session.token, { ...hi, route_mode: 'developer_key' });
    expect(explicit.status).toBe(400);
    expect(explicit.upstreamCalls).toBe(0);
  });

  it("holds the developer's price against the user's balance first: a user who cannot pay gets 402 and no upstream call", async () => {
    const { id } = await replaceDeveloperKey('10.00000000');
    const broke = await fundedSession(testEnv, '0.00000000');
    const refused = await callGateway(broke.token, hi);
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('insufficient_balance');
    expect(refused.upstreamCalls).toBe(0);
    // The budget reserved for the refused call is given back.
    await settled(testEnv);
    expect(formatUsd(await reservedForCalls(testEnv, broke, id))).toBe('0.00000000');
    // A user who can pay is held for, then charged exactly the rated price; the hold is settled.
    const payer = await fundedSession(testEnv, '1.00000000');
    const paid = await callGateway(payer.token, hi);
    expect(paid.status).toBe(200);
    expect(paid.body.faucet.route_mode).toBe('developer_key');
    await settled(testEnv);
    const [booked] = await sql<{ retail_usd: string }>(testEnv, 'select retail_usd::text from usage_events where client_request_id = $1', [
      paid.requestId,
    ]);
    expect(booked?.retail_usd).toBe(paid.body.faucet.charge.amount_usd);
    expect((await wallet(testEnv, payer.walletId)).held).toBe('0.00000000');
    await disableDeveloperKeys();
    expect(id).toBeTruthy();
  });

  it('a user asking for byok gets their own key even when the developer has one', async () => {
    await replaceDeveloperKey('10.00000000');
    const session = await fundedSession(testEnv, '0.00000000');
    const own = await addUserKey(session.token);
    expect((await callGateway(session.token, { ...hi, route_mode: 'byok' })).authorization).toBe(`Bearer ${own.apiKey}`);
    await disableDeveloperKeys();
  });
});

describe('developer key budgets', () => {
  const reference = parseModel(hi.model);
  /** What each developer-key call reserves: the platform hold's worst case for this request (as sent upstream: no `feature`). */
  const { feature: _feature, ...sentUpstream } = hi;
  const bound = () => holdBounds(testEnv, reference, { ...sentUpstream, model: reference.model } as never).platform!;
  /** What each call actually costs upstream (the fake upstream reports 11 + 7 tokens). */
  const actual = () =>
    rateUsage({ routeMode: 'developer_key', provider: 'openai', model: 'gpt-4o-mini', inputTokens: 11, outputTokens: 7, estimated: false })
      .upstreamCostUsd;

  async function spentOn(credentialId: string) {
    const [row] = await sql<{ spent: string; calls: number }>(
      testEnv,
      `select coalesce(sum(upstream_cost_usd), 0)::numeric(20, 8)::text as spent, count(*)::integer as calls
         from usage_events where provider_credential_id = $1`,
      [credentialId],
    );
    return { spent: parseDatabaseAmount(row!.spent), calls: row!.calls };
  }

  it('under concurrent calls never exceeds the monthly budget; past it calls fall back to the platform pool', async () => {
    const budget = parseWireAmount('0.00003000');
    const developer = await replaceDeveloperKey(formatUsd(budget));
    const session = await fundedSession(testEnv, '1.00000000');

    const routes: string[] = [];
    const sent = upstream.requests.length;
    for (let burst = 0; burst < 3; burst++) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => callGateway(session.token, hi)));
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        routes.push(answer.body.faucet.route_mode);
      }
    }
    // Whatever the route, the key that went upstream is the one that route owns.
    const keysSent = upstream.requests.slice(sent).map((request) => request.headers.authorization);
    expect(keysSent.filter((key) => key === `Bearer ${developer.apiKey}`)).toHaveLength(
      routes.filter((route) => route === 'developer_key').length,
    );
    expect(keysSent.filter((key) => key === `Bearer ${poolKey}`)).toHaveLength(routes.filter((route) => route === 'platform').length);
    await settled(testEnv);
    const { spent, calls } = await spentOn(developer.id);
    expect(calls).toBe(routes.filter((route) => route === 'developer_key').length);
    expect(calls).toBeGreaterThan(0);
    expect(routes).toContain('platform');
    // The guarantee: at most one call's worst case past the budget (this design: never past it)…
    expect(compareUsd(spent, addUsd(budget, bound()))).toBeLessThanOrEqual(0);
    expect(compareUsd(spent, budget)).toBeLessThanOrEqual(0);
    // …and the budget was really used: what is left cannot carry one more worst case.
    expect(compareUsd(addUsd(spent, bound()), budget)).toBeGreaterThan(0);
    expect(compareUsd(spent, parseWireAmount(formatUsd(actual())))).toBeGreaterThanOrEqual(0);
    const [open] = await sql<{ n: number }>(
      testEnv,
      `select count(*)::integer as n from provider_credential_reservations r
        where r.credential_id = $1 and not exists (select 1 from usage_events u where u.request_id = r.request_id)`,
      [developer.id],
    );
    expect(open!.n).toBe(0);
  });

  it('refuses route_mode "developer_key" past the budget with 402 budget_exceeded, before any upstream call', async () => {
    const budget = parseWireAmount('0.00001000');
    const developer = await replaceDeveloperKey(formatUsd(budget));
    const session = await fundedSession(testEnv, '1.00000000');
    const first = await callGateway(session.token, { ...hi, route_mode: 'developer_key' });
    expect(first.status).toBe(200);
    expect(first.authorization).toBe(`Bearer ${developer.apiKey}`);
    await settled(testEnv);
    const before = await wallet(testEnv, session.walletId);
    const second = await callGateway(session.token, { ...hi, route_mode: 'developer_key' });
    expect(second.status).toBe(402);
    expect(second.body.error.code).toBe('budget_exceeded');
    expect(second.upstreamCalls).toBe(0);
    await settled(testEnv);
    // Nothing charged. (What is held may differ: the refusal's request-log row is written by the
    // object's alarm, which may renew its lease after the recall.)
    expect((await wallet(testEnv, session.walletId)).balance).toBe(before.balance);
    expect(await sql(testEnv, 'select 1 from usage_events where client_request_id = $1', [second.requestId])).toEqual([]);
    // Without route_mode the same call falls back to the platform pool.
    const fallback = await callGateway(session.token, hi);
    expect(fallback.body.faucet.route_mode).toBe('platform');
    expect(fallback.authorization).toBe(`Bearer ${poolKey}`);
  });

  it('gives the reserved budget back when the upstream fails, so failures never use it up', async () => {
    const developer = await replaceDeveloperKey('0.00001000');
    const session = await fundedSession(testEnv, '1.00000000');
    for (let attempt = 0; attempt < 3; attempt++) {
      const failed = await callGateway(session.token, { ...hi, messages: [{ role: 'user', content: 'fail please' }] });
      expect(failed.status).toBe(502);
      expect(failed.authorization).toBe(`Bearer ${developer.apiKey}`);
    }
    await settled(testEnv);
    expect(await sql(testEnv, 'select 1 from provider_credential_reservations where credential_id = $1', [developer.id])).toEqual([]);
    expect((await callGateway(session.token, hi)).body.faucet.route_mode).toBe('developer_key');
    await disableDeveloperKeys();
  });
});

describe('no raw key anywhere', () => {
  it('in any response body, CSV report, audit row, log line or table — only the ciphertext holds each key, encrypted', async () => {
    expect(rawKeys.length).toBeGreaterThanOrEqual(8);
    for (const report of ['usage', 'revenue', 'payouts']) {
      const response = await send(testEnv, `/v1/admin/reports/${report}.csv`, { token: adminToken });
      expect(response.status).toBe(200);
      expect(response.text.split('\n').length).toBeGreaterThan(1);
    }
    const audit = JSON.stringify(await auditRows(testEnv));
    const dump = await dumpAllTables(testEnv);
    const places: Array<[string, string]> = [
      ['response bodies', seenBodies.join('\n')],
      ['audit log', audit],
      ['logs', logLines.join('\n')],
      ...[...dump].map(([table, rows]): [string, string] => [`table ${table}`, rows.join('\n')]),
    ];
    expect(logLines.length).toBeGreaterThan(0);
    expect(dump.get('provider_credentials')!.length).toBeGreaterThanOrEqual(rawKeys.length);
    for (const rawKey of rawKeys) {
      const secretPart = rawKey.slice(8, -4);
      for (const [where, text] of places) {
        expect(text.includes(secretPart), `${where} holds a raw key`).toBe(false);
        expect(text.includes(btoa(rawKey).slice(4, 28)), `${where} holds a base64 raw key`).toBe(false);
      }
    }
    const keyring = await keyringFrom(testEnv.PROVIDER_KEY_ENCRYPTION_KEY);
    const stored = await sql<{ id: string; provider: string; ciphertext: string; iv: string; key_version: number }>(
      testEnv,
      'select id, provider, ciphertext, iv, key_version from provider_credentials',
    );
    const decrypted = await Promise.all(
      stored.map((row) =>
        openKey(
          keyring,
          { ciphertext: row.ciphertext, iv: row.iv, keyVersion: row.key_version },
          { credentialId: row.id, provider: row.provider },
        ),
      ),
    );
    for (const rawKey of rawKeys) expect(decrypted).toContain(rawKey);
  });
});
