/**
 * The upstream audit with fallback (docs/models.md, "Fallback and aliases"): the provider's log has
 * one row per attempt (`<call id>` first, `<call id>:<n>` for a fallback); the audit groups them by
 * gateway call. A failed attempt without tokens needs no booking; one the provider reports tokens for
 * does; the answering attempt must be booked once with at least its tokens.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, openAiCompletion, type RecordedRequest } from '../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayWith, newRequestId, settled, userMessage } from '../../test/gateway-kit.ts';
import { createDatabase, createTestEnv, demoPublicAppId, sql, type TestEnv } from '../../test/harness.ts';
import { auditUpstreamCalls, callIdOfAttempt, type ReportedUpstreamCall } from './upstream-audit.ts';

let testEnv: TestEnv;
/** A call whose first attempt failed (500) and whose fallback answered (11 + 7 tokens, booked). */
let answered: { first: string; fallback: string };
/** A call whose every attempt failed: released, nothing booked. */
let released: { first: string; fallback: string };

const ids = (requests: RecordedRequest[]) => requests.map((request) => request.headers['x-client-request-id'] ?? '');

beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
  await sql(
    testEnv,
    `insert into app_features (app_id, feature_key, name, default_model, fallback_models)
     select id, 'audited', 'audited', 'openai:gpt-4o-mini', '["openai:gpt-4o"]' from apps where public_app_id = $1`,
    [demoPublicAppId],
  );
  const session = await fundedSession(testEnv);
  const body = { model: 'openai:gpt-4o-mini', feature: 'audited', messages: [userMessage('hi')] };
  const fallingBack = fakeUpstream((request) =>
    (request.body as { model: string }).model === 'gpt-4o-mini'
      ? jsonResponse({ error: { message: 'down' } }, 500)
      : jsonResponse(openAiCompletion('from the fallback')),
  );
  expect((await chat(gatewayWith({ upstreamFetch: fallingBack.fetch }), testEnv, session.token, body, newRequestId())).status).toBe(200);
  const [first = '', fallback = ''] = ids(fallingBack.requests);
  answered = { first, fallback };
  const down = fakeUpstream(() => jsonResponse({ error: { message: 'down' } }, 503));
  expect((await chat(gatewayWith({ upstreamFetch: down.fetch }), testEnv, session.token, body, newRequestId())).status).toBe(502);
  const [releasedFirst = '', releasedFallback = ''] = ids(down.requests);
  released = { first: releasedFirst, fallback: releasedFallback };
  // The wallet object books what it settled (its flush): the audit reads the ledger.
  await settled(testEnv);
});

async function audit(reported: ReportedUpstreamCall[]) {
  const { db, pool } = createDatabase(testEnv);
  try {
    return await auditUpstreamCalls(db, reported);
  } finally {
    await pool.end();
  }
}

const failedAttempt = (callId: string, inputTokens = 0, outputTokens = 0): ReportedUpstreamCall => ({
  callId,
  inputTokens,
  outputTokens,
  failed: true,
});
const answeredAttempt = (callId: string, inputTokens = 11, outputTokens = 7): ReportedUpstreamCall => ({
  callId,
  inputTokens,
  outputTokens,
});

describe('callIdOfAttempt', () => {
  it('is the gateway call of an attempt id: the id itself, or what precedes `:<n>`', () => {
    expect(callIdOfAttempt('0b6e3b43-5a7c-4d0e-9f3e-0a1b2c3d4e5f')).toBe('0b6e3b43-5a7c-4d0e-9f3e-0a1b2c3d4e5f');
    expect(callIdOfAttempt('0b6e3b43-5a7c-4d0e-9f3e-0a1b2c3d4e5f:2')).toBe('0b6e3b43-5a7c-4d0e-9f3e-0a1b2c3d4e5f');
  });
});

describe('the upstream audit groups attempts by call', () => {
  it('sent the ids it expects: the call id, then `<call id>:1`', () => {
    expect(answered.fallback).toBe(`${answered.first}:1`);
    expect(released.fallback).toBe(`${released.first}:1`);
  });

  it('a failed first attempt without tokens and the answering fallback booked once: clean', async () => {
    expect(await audit([failedAttempt(answered.first), answeredAttempt(answered.fallback)])).toEqual({
      ok: true,
      upstreamCalls: 2,
      unbilledCalls: 0,
      unbilledTokens: 0,
      doubleBilledCalls: 0,
      findings: [],
    });
  });

  it('a call whose attempts all failed without tokens needs no booking', async () => {
    expect(await audit([failedAttempt(released.first), failedAttempt(released.fallback)])).toMatchObject({
      ok: true,
      unbilledCalls: 0,
      unbilledTokens: 0,
    });
  });

  it('a failed attempt the provider reports tokens for, on a call never booked, is unbilled', async () => {
    const result = await audit([failedAttempt(released.first, 40, 0), failedAttempt(released.fallback)]);
    expect(result).toMatchObject({ ok: false, unbilledCalls: 1, unbilledTokens: 40 });
    expect(result.findings).toEqual([{ callId: released.first, problem: 'unbilled', reportedTokens: 40, bookedTokens: 0 }]);
  });

  it('an answering attempt the provider billed more tokens than were booked is under-billed by the difference', async () => {
    const result = await audit([failedAttempt(answered.first), answeredAttempt(answered.fallback, 11, 30)]);
    expect(result).toMatchObject({ ok: false, unbilledCalls: 0, unbilledTokens: 23 });
    expect(result.findings).toEqual([{ callId: answered.first, problem: 'under_billed', reportedTokens: 41, bookedTokens: 18 }]);
  });

  it('two attempts of one call that both answered (billed twice upstream, booked once) are flagged', async () => {
    const result = await audit([answeredAttempt(answered.first), answeredAttempt(answered.fallback)]);
    expect(result.ok).toBe(false);
    expect(result.doubleBilledCalls).toBeGreaterThanOrEqual(1);
    expect(result.findings.map((finding) => finding.problem)).toContain('double_billed');
  });

  it('an attempt id of no call Faucet made is unbilled', async () => {
    const stray = `${crypto.randomUUID()}:1`;
    expect(await audit([answeredAttempt(stray)])).toMatchObject({ ok: false, unbilledCalls: 1, unbilledTokens: 18 });
  });
});
