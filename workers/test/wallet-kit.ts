/**
 * Test support for wallet objects: an env with leases on, the object a session token
 * names, a platform call and the usage its fake upstream reports.
 */
import { env as workerEnv, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { expect } from 'vitest';
import { walletOfToken } from '#shared/auth/session-token.ts';
import { sha256Hex } from '#shared/crypto.ts';
import { createDatabase, observeStatements } from '#shared/db.ts';
import type { WalletCallDecision, WalletObjectContract } from '#shared/durable-objects.ts';
import type { Env } from '#shared/env.ts';
import type { StoredCall } from '../gateway/src/wallet/lease-book.ts';
import { formatUsd, parseDatabaseAmount, subtractUsd, usdToUnits } from '#shared/money/index.ts';
import { auditUpstreamCalls } from '#shared/calls/upstream-audit.ts';
import { reconcileLedger } from '#shared/ledger/reconcile.ts';
import { createTestEnv, type TestEnv } from './harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion, type RecordedRequest } from './fake-upstream.ts';
import { gatewayWith, userMessage } from './gateway-kit.ts';
import { openLedgerDatabase } from './ledger-kit.ts';
import { worstCaseInputTokens } from '../gateway/src/metering/worst-case-tokens.ts';
import type { ChatRequest } from '../gateway/src/openai/chat-schemas.ts';
import { parseModel } from '../gateway/src/routing/parse-model.ts';

const namespace = (workerEnv as unknown as Env).WALLET as DurableObjectNamespace<WalletObjectContract>;

/** A database of the test's own, the platform pool keyed. */
export function leasedTestEnv(): Promise<TestEnv> {
  return createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
}

/** The wallet object a session token names. */
export function walletObjectOf(token: string): DurableObjectStub<WalletObjectContract> {
  const name = walletOfToken(token);
  if (name === null) throw new Error('the session token names no wallet');
  return namespace.get(namespace.idFromName(name));
}

/** What the fake upstream reports for each call. */
/**
 * Time passes for one call the wallet object of `token` keeps: its deadline and grace are made past
 * (in its storage, the object then restarted to read it as stored), and the object's alarm runs —
 * it sweeps the call.
 */
export async function sweepCallNow(token: string, callId: string): Promise<void> {
  await runInDurableObject(walletObjectOf(token), async (_instance, state) => {
    const stored = (await state.storage.get<StoredCall>(`call:${callId}`)) as StoredCall;
    await state.storage.put(`call:${callId}`, { ...stored, sweepAt: Date.now() - 1 });
    await state.storage.sync();
    state.abort('reload the call as stored');
  }).catch(() => undefined);
  // A new stub: the restart broke the one that made it.
  expect(await runDurableObjectAlarm(walletObjectOf(token))).toBe(true);
}

/** The ids of the calls the wallet object of `token` keeps (in flight, or settled and not booked yet). */
export function callsKeptBy(token: string): Promise<string[]> {
  return runInDurableObject(walletObjectOf(token), async (_instance, state) =>
    [...(await state.storage.list({ prefix: 'call:' })).keys()].map((key) => key.slice('call:'.length)),
  );
}

/** One call the wallet object of `token` keeps, as stored: its reserved worst case, its record and how it is rated at its bound. */
export function keptCall(token: string, callId: string): Promise<StoredCall> {
  return runInDurableObject(walletObjectOf(token), async (_instance, state) => {
    const stored = await state.storage.get<StoredCall>(`call:${callId}`);
    if (stored === undefined) throw new Error(`the wallet object keeps no call ${callId}`);
    return stored;
  });
}

export const reportedUsage = { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 };

/** A platform-route call of the demo app's `chat` feature. */
export const platformCall = { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('Tell me something')], max_tokens: 50 };

/** An upstream that answers every call at once with `reportedUsage`. */
export function answeringUpstream() {
  return fakeUpstream(() => jsonResponse(openAiCompletion('Hello', reportedUsage)));
}

/** An 8-decimal USD string as integer units of 10⁻⁸ USD, to compare amounts without floats. */
export const unitsOf = (usd: string): bigint => usdToUnits(parseDatabaseAmount(usd));

/** `from − amount`, both 8-decimal USD strings, exactly. */
export const usdMinus = (from: string, amount: string): string =>
  formatUsd(subtractUsd(parseDatabaseAmount(from), parseDatabaseAmount(amount)));

/**
 * The invariant every wallet test ends on: each call the fake upstream answered billed once, at least
 * as it reported (`reportedUsage`, or `usageOf` the call's request); the ledger reconciles.
 */
export async function expectBooksAgree(
  testEnv: TestEnv,
  requests: RecordedRequest[],
  usageOf: (request: RecordedRequest) => typeof reportedUsage = () => reportedUsage,
): Promise<void> {
  const { audit, reconciliation } = await ledgerChecks(testEnv, requests, usageOf);
  expect(audit).toMatchObject({ ok: true, unbilledCalls: 0, doubleBilledCalls: 0 });
  expect(reconciliation.ok).toBe(true);
}

async function ledgerChecks(testEnv: TestEnv, requests: RecordedRequest[], usageOf: (request: RecordedRequest) => typeof reportedUsage) {
  const database = openLedgerDatabase(testEnv, 2);
  try {
    const audit = await auditUpstreamCalls(
      database.db,
      requests.map((request) => ({
        callId: request.headers['x-client-request-id'] as string,
        inputTokens: usageOf(request).prompt_tokens,
        outputTokens: usageOf(request).completion_tokens,
      })),
    );
    const reconciliation = await reconcileLedger(database.db);
    return { audit, reconciliation };
  } finally {
    await database.close();
  }
}

/** The gateway, counting the Postgres statements it runs itself (a wallet object's are its own). */
export function countingGateway(upstreamFetch: ReturnType<typeof fakeUpstream>['fetch']) {
  const counted = { statements: 0 };
  const gateway = gatewayWith({
    upstreamFetch,
    openDatabase: (env: Env) =>
      observeStatements(createDatabase(env), (run) => {
        counted.statements++;
        return run();
      }),
  });
  return { gateway, counted };
}

/**
 * What the gateway asks the wallet object of `token` before it calls the upstream — for a call whose
 * isolate then dies, so that no settlement ever comes (gpt-4o-mini, 100 + 500 tokens at most).
 */
export async function authorizeOnly(
  testEnv: TestEnv,
  token: string,
  call: { id: string; clientRequestId: string; requestedRoute?: 'byok' | 'developer_key' | null; authorizedAt?: number },
): Promise<WalletCallDecision> {
  return walletObjectOf(token).authorize({
    wallet: walletOfToken(token) as string,
    tokenHash: await sha256Hex(token),
    featureKey: 'chat',
    requestedRoute: call.requestedRoute ?? null,
    provider: 'openai',
    model: 'gpt-4o-mini',
    alias: null,
    fallbacks: [],
    platformHold: '0.00100000',
    catalogCost: '0.00080000',
    poolAvailable: true,
    call: {
      id: call.id,
      moneyKey: `call:${call.id}`,
      clientRequestId: call.clientRequestId,
      fingerprint: 'f'.repeat(64),
      boundInputTokens: 100,
      boundOutputTokens: 500,
      maxDurationSeconds: 60,
      platformMarkupBps: 2000,
      platformFeeBps: 1000,
      authorizedAt: call.authorizedAt ?? Date.now(),
      candidates: [{ provider: 'openai', model: 'gpt-4o-mini', boundInputTokens: 100, boundOutputTokens: 500 }],
    },
    databaseUrl: testEnv.DATABASE_URL,
  });
}

/**
 * Calls of gpt-4o-mini with at most `worstCaseMaxTokens` output tokens, against an upstream that
 * reports each one's worst case (the prompt's worst-case tokens and every output token): a call is
 * charged exactly its hold, and on the developer-key route costs exactly what it reserved.
 */
export const worstCaseModel = 'openai:gpt-4o-mini';
export const worstCaseMaxTokens = 40;
export const worstCaseReference = parseModel(worstCaseModel);

/** The body a test sends. */
export const worstCaseAsk = (content = 'hello', extra: Record<string, unknown> = {}) => ({
  model: worstCaseModel,
  max_tokens: worstCaseMaxTokens,
  messages: [userMessage(content)],
  ...extra,
});

/** The request as the gateway bounds it. */
export const worstCaseSent = (content: string): ChatRequest => ({
  max_tokens: worstCaseMaxTokens,
  messages: [userMessage(content)],
  model: worstCaseReference.model,
});

/** The usage the upstream reports for a request: its worst case. */
export function worstUsage(request: RecordedRequest) {
  const content = (request.body as { messages: Array<{ content: string }> }).messages[0]!.content;
  const prompt = worstCaseInputTokens(worstCaseSent(content), worstCaseReference);
  return { prompt_tokens: prompt, completion_tokens: worstCaseMaxTokens, total_tokens: prompt + worstCaseMaxTokens };
}

export function worstCaseUpstream() {
  return fakeUpstream((request) => jsonResponse(openAiCompletion('x', worstUsage(request))));
}
