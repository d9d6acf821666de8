/**
 * The bounded load run: many end users making plain and streamed `mock:echo` calls through the
 * gateway while top-ups arrive through the Stripe webhook (each redelivered once), admins post
 * adjustments and payouts run — all at the same time. Bounded by a number of calls and a deadline;
 * every call carries a request id the client chose, so the books can be checked against it after.
 */
import {
  admin,
  chat,
  createSession,
  deliverWebhook,
  paidCheckoutEvent,
  startCheckout,
  userWallet,
  type Outcome,
  type StackTarget,
} from './stack-client.ts';

export interface LoadPlan {
  users: number;
  /** Gateway calls in total (half streamed). */
  calls: number;
  /** Gateway calls in flight at once. */
  concurrency: number;
  /** Money operations (top-up, adjustment, payout) in flight at once, beside the calls. */
  moneyActors: number;
  /** The run stops starting new work after this long. */
  maxDurationMs: number;
  /** Fault injection: called this many times, evenly through the calls (e.g. cut every database connection). */
  faults?: { count: number; inject(): void };
  /**
   * A database outage: begun once `atCall` calls have started, ended `durationMs` after it began.
   * Calls and money operations go on throughout, paced to one a second per worker while the
   * database is down; calls started during the outage do not count towards `calls`, so the run
   * goes on after it. Webhook deliveries are retried until acknowledged, as Stripe retries them.
   */
  outage?: { atCall: number; durationMs: number; begin(): Promise<void>; end(): Promise<void> };
}

export interface LoadTarget extends StackTarget {
  webhookSecret: string;
}

export type OperationKind =
  | 'session'
  | 'chat'
  | 'chat_stream'
  | 'checkout'
  | 'webhook'
  | 'webhook_retry'
  | 'webhook_redelivery'
  | 'adjustment'
  | 'payout';

export interface OperationRecord {
  kind: OperationKind;
  status: number;
  code: string | null;
  ms: number;
  /** When the answer came (or the client gave up), as `performance.now()`. */
  endedAt: number;
  /** The answer's `retry-after` header, if any. */
  retryAfter: string | null;
}

export interface CallRecord {
  requestId: string;
  stream: boolean;
  status: number;
  code: string | null;
  chargedUsd: string | null;
  /** When the client sent it, in ms since the main phase began. */
  sentMs: number;
  /** When the client had its whole answer (or gave up), in ms since the main phase began. */
  answeredMs: number;
}

export interface LoadResult {
  runId: string;
  plan: LoadPlan;
  operations: OperationRecord[];
  calls: CallRecord[];
  /** Stripe checkout session ids whose completion event was delivered (the top-ups of the run). */
  paidCheckouts: string[];
  mainPhaseMs: number;
  faultsInjected: number;
  /** When the main phase began, as `performance.now()`. */
  mainPhaseStartedAt: number;
  /** The outage, in ms since the main phase began (`endedMs`: once the database was back). */
  outage: { beganMs: number; endedMs: number } | null;
  /** What must never show up in logs or the database (tests/load/scan-secrets.ts). */
  secrets: { sessionTokens: string[]; externalUserIds: string[]; promptMarker: string };
  /** Problems the client saw while running (a webhook credited twice, …). */
  problems: string[];
}

interface User {
  token: string;
  walletId: string;
}

const NETWORK_ERROR = 599;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function timed<T>(
  kind: OperationKind,
  operations: OperationRecord[],
  work: () => Promise<T & { status: number; code: string | null; retryAfter?: string | null }>,
) {
  const started = performance.now();
  try {
    const result = await work();
    const endedAt = performance.now();
    operations.push({
      kind,
      status: result.status,
      code: result.code,
      ms: endedAt - started,
      endedAt,
      retryAfter: result.retryAfter ?? null,
    });
    return result;
  } catch (error) {
    const endedAt = performance.now();
    operations.push({
      kind,
      status: NETWORK_ERROR,
      code: `network:${(error as Error).name}`,
      ms: endedAt - started,
      endedAt,
      retryAfter: null,
    });
    return undefined;
  }
}

export async function runLoad(target: LoadTarget, plan: LoadPlan): Promise<LoadResult> {
  const runId = `load-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const operations: OperationRecord[] = [];
  const calls: CallRecord[] = [];
  const paidCheckouts: string[] = [];
  const problems: string[] = [];
  const deadline = Date.now() + plan.maxDurationMs;
  let started = performance.now();
  // The outage's course: `down` from its beginning until the database is back.
  const outage = { phase: 'before' as 'before' | 'down' | 'after', beganMs: 0, endedMs: 0, over: Promise.resolve() };
  const outageGoingOn = () => outage.phase === 'down';
  const promptMarker = `prompt-canary-${Math.random().toString(36).slice(2, 10)}`;

  /**
   * A checkout paid and its completion delivered like Stripe does: retried until acknowledged (a
   * 5xx from a cut database connection is retried), and with `redeliver` sent once more after that.
   * Whatever the deliveries, the wallet must be credited exactly once (checked in the books).
   */
  const topUp = async (user: User, amountUsd: string, redeliver: boolean) => {
    const checkout = await timed('checkout', operations, async () => {
      const started = await startCheckout(target, user.token, amountUsd);
      return { ...started.outcome, started };
    });
    const sessionId = checkout?.started.sessionId;
    if (!checkout || !sessionId) return;
    const event = paidCheckoutEvent(sessionId, checkout.started.amountCents);
    let credited = 0;
    let acknowledged = false;
    for (let attempt = 0; !acknowledged && (attempt < 4 || outageGoingOn()); attempt++) {
      const delivered = await timed(attempt === 0 ? 'webhook' : 'webhook_retry', operations, () =>
        deliverWebhook(target, target.webhookSecret, event),
      );
      acknowledged = delivered?.status === 200;
      if ((delivered?.body as { credited?: boolean } | undefined)?.credited === true) credited++;
      if (!acknowledged && outageGoingOn()) await sleep(1000);
    }
    if (!acknowledged) return;
    if (redeliver) {
      const again = await timed('webhook_redelivery', operations, () => deliverWebhook(target, target.webhookSecret, event));
      if ((again?.body as { credited?: boolean } | undefined)?.credited === true) credited++;
    }
    paidCheckouts.push(sessionId);
    if (credited > 1) problems.push(`checkout ${sessionId}: ${credited} deliveries answered credited`);
  };

  // Setup: sessions, each wallet funded through a real checkout + webhook.
  const users: User[] = [];
  await pool(
    Array.from({ length: plan.users }, (_, index) => index),
    8,
    async (index) => {
      const session = await timed('session', operations, async () => {
        const token = await createSession(target, `${runId}-user-${index}`);
        return { status: 201, code: null, token };
      });
      if (!session) return;
      const wallet = await userWallet(target, session.token);
      const user = { token: session.token, walletId: wallet.wallet_id };
      await topUp(user, '1.00000000', false);
      users.push(user);
    },
  );
  if (users.length === 0) throw new Error('no session could be created');

  started = performance.now();
  let nextCall = 0;
  // Calls started outside the outage, bounded by `plan.calls`.
  let counted = 0;
  let faultsInjected = 0;
  let callsDone = false;
  const beginOutage = (planned: NonNullable<LoadPlan['outage']>) => {
    outage.phase = 'down';
    outage.beganMs = performance.now() - started;
    outage.over = (async () => {
      await planned.begin();
      await sleep(planned.durationMs);
      await planned.end();
      outage.endedMs = performance.now() - started;
      outage.phase = 'after';
    })();
  };
  const callWorker = async () => {
    while (Date.now() < deadline || outageGoingOn()) {
      if (outageGoingOn()) await sleep(1000);
      else if (counted++ >= plan.calls) return;
      const number = nextCall++;
      if (plan.outage && outage.phase === 'before' && counted >= plan.outage.atCall) beginOutage(plan.outage);
      if (
        plan.faults &&
        plan.faults.count > 0 &&
        number > 0 &&
        number % Math.max(1, Math.floor(plan.calls / (plan.faults.count + 1))) === 0
      ) {
        if (faultsInjected < plan.faults.count) {
          faultsInjected++;
          plan.faults.inject();
        }
      }
      const user = users[number % users.length]!;
      const stream = number % 2 === 1;
      const requestId = `${runId}-c${number}`;
      const sentMs = performance.now() - started;
      const result = await timed(stream ? 'chat_stream' : 'chat', operations, () =>
        chat(target, user.token, requestId, { stream, text: `${promptMarker}: load call ${number}, please answer` }),
      );
      calls.push({
        requestId,
        sentMs,
        answeredMs: performance.now() - started,
        stream,
        status: result?.status ?? NETWORK_ERROR,
        code: result ? result.code : 'network',
        chargedUsd: result?.chargedUsd ?? null,
      });
    }
  };

  let moneyStep = 0;
  const moneyWorker = async () => {
    while (!callsDone && Date.now() < deadline) {
      if (outageGoingOn()) await sleep(1000);
      const step = moneyStep++;
      const user = users[step % users.length]!;
      switch (step % 4) {
        case 0:
          await topUp(user, '2.00000000', true);
          break;
        case 1:
        case 2: {
          const direction = step % 4 === 1 ? 'credit' : 'debit';
          const json = {
            kind: 'adjustment',
            direction,
            amount_usd: direction === 'credit' ? '0.01000000' : '0.00100000',
            reason: `load run ${direction}`,
            idempotency_key: `${runId}-adj${step}`,
          };
          await timed('adjustment', operations, () => admin(target, `/v1/admin/wallets/${user.walletId}/adjustments`, { json }));
          break;
        }
        default:
          await timed('payout', operations, () => payoutRound(target, runId));
      }
    }
  };

  await Promise.all([
    (async () => {
      await Promise.all(Array.from({ length: plan.concurrency }, callWorker));
      callsDone = true;
    })(),
    ...Array.from({ length: plan.moneyActors }, moneyWorker),
  ]);
  await outage.over;
  const mainPhaseMs = performance.now() - started;
  const secrets = {
    sessionTokens: users.map((user) => user.token),
    externalUserIds: Array.from({ length: plan.users }, (_, index) => `${runId}-user-${index}`),
    promptMarker,
  };
  return {
    runId,
    plan,
    operations,
    calls,
    paidCheckouts,
    mainPhaseMs,
    mainPhaseStartedAt: started,
    problems,
    faultsInjected,
    outage: plan.outage && outage.phase !== 'before' ? { beganMs: outage.beganMs, endedMs: outage.endedMs } : null,
    secrets,
  };
}

/** Creates the pending payouts due (any developer balance), approves and pays each. */
async function payoutRound(target: StackTarget, runId: string): Promise<Outcome> {
  const created = await admin(target, '/v1/admin/payouts/run-mock', { json: { threshold_usd: '0.00000001' } });
  if (created.status !== 201) return created;
  for (const payout of (created.body as { data: Array<{ id: string }> }).data) {
    const approved = await admin(target, `/v1/admin/payouts/${payout.id}/approve`, { json: { operator_note: `load run ${runId}` } });
    if (approved.status !== 200) return approved;
    const paid = await admin(target, `/v1/admin/payouts/${payout.id}/mark-paid`, { json: {} });
    if (paid.status !== 200) return paid;
  }
  return created;
}

async function pool<T>(items: T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(size, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}
