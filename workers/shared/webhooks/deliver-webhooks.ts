/**
 * The webhooks queue's consumer (docs/webhooks.md). A `relay` message runs the outbox relay; a
 * `deliver` message sends one delivery: its event rendered, signed with the endpoint's live secrets,
 * POSTed through the one outbound fetch (its address guard: never a private, loopback or link-local
 * target in production; https in production), and each attempt kept in the delivery log. A non-2xx
 * answer or no answer is retried by the queue with a growing delay, up to WEBHOOK_MAX_ATTEMPTS; then
 * the delivery is `failed` (a resend starts it again). A refused or deleted endpoint fails at once.
 */
import { sql } from 'drizzle-orm';
import { createHttpDatabase } from '../db.ts';
import { type Env, intSetting, isProduction } from '../env.ts';
import { createLogger } from '../logger.ts';
import { queryRows, type SqlDatabase } from '../query.ts';
import { checkUpstreamUrl } from '../upstream/address-guard.ts';
import { loopbackAllowance } from '../upstream/loopback-allowance.ts';
import { type FetchFunction, outboundFetch } from '../upstream/outbound-fetch.ts';
import { FaucetError } from '../wire/errors.ts';
import { type EndpointRow, signingSecrets } from './endpoints.ts';
import { relayWebhookEvents } from './relay.ts';
import { renderEvent, type StoredEvent } from './render-event.ts';
import { signatureHeader, signatureHeaderName } from './signature.ts';
import { parseWebhookMessage } from './webhook-message.ts';

const deliveryTimeoutMs = 10_000;
const defaultMaxAttempts = 8;
const defaultBaseDelaySeconds = 30;
const longestDelaySeconds = 3600;

/** 30 s, 1 min, 2 min, … at most an hour (WEBHOOK_RETRY_BASE_SECONDS sets the first). */
export function webhookRetryDelaySeconds(env: Env, attempts: number): number {
  const base = intSetting(env.WEBHOOK_RETRY_BASE_SECONDS, defaultBaseDelaySeconds);
  return Math.min(longestDelaySeconds, base * 2 ** Math.max(0, attempts - 1));
}

export function webhookMaxAttempts(env: Env): number {
  return Math.max(1, intSetting(env.WEBHOOK_MAX_ATTEMPTS, defaultMaxAttempts));
}

interface LoadedDelivery {
  id: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  event: StoredEvent;
  endpoint: EndpointRow & { deleted_at: string | null };
}

async function loadDelivery(db: SqlDatabase, deliveryId: string): Promise<LoadedDelivery | undefined> {
  const [row] = await queryRows<LoadedDelivery>(
    db,
    sql`select d.id, d.status, d.attempts,
               jsonb_build_object('id', e.id, 'type', e.type, 'data', e.data,
                 'created_at', to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 'public_app_id', (select a.public_app_id from apps a where a.id = (e.data ->> 'app_id')::uuid)) as event,
               to_jsonb(w) as endpoint
          from webhook_deliveries d
          join webhook_events e on e.id = d.event_id
          join webhook_endpoints w on w.id = d.endpoint_id
         where d.id = ${deliveryId}::uuid`,
  );
  return row;
}

type Outcome = { ok: true; status: number } | { ok: false; status: number | null; error: string; final: boolean };

/** Keeps one attempt in the log and moves the delivery on: delivered, failed, or pending until `retryAt`. */
async function recordAttempt(
  db: SqlDatabase,
  deliveryId: string,
  outcome: Outcome,
  durationMs: number,
  next: { failed: boolean; delaySeconds: number },
): Promise<void> {
  const status = outcome.ok ? 'delivered' : next.failed ? 'failed' : 'pending';
  await queryRows(
    db,
    sql`with attempt as (
          insert into webhook_delivery_attempts (delivery_id, status_code, error, duration_ms)
          values (${deliveryId}::uuid, ${outcome.status}, ${outcome.ok ? null : outcome.error.slice(0, 500)}, ${Math.max(0, Math.round(durationMs))})
        )
        update webhook_deliveries set attempts = attempts + 1, last_attempt_at = now(),
               last_status = ${outcome.status}, last_error = ${outcome.ok ? null : outcome.error.slice(0, 500)},
               status = ${status}, delivered_at = case when ${outcome.ok} then now() end,
               next_attempt_at = now() + make_interval(secs => ${next.delaySeconds})
         where id = ${deliveryId}::uuid and status = 'pending'
        returning id`,
  );
}

/** Sends the delivery once; answers the delay to retry after, or null when the queue should forget it. */
async function deliverOnce(db: SqlDatabase, env: Env, deliveryId: string, attempt: number, fetch: FetchFunction): Promise<number | null> {
  const delivery = await loadDelivery(db, deliveryId);
  if (delivery === undefined || delivery.status !== 'pending') return null;
  const { endpoint } = delivery;
  const started = Date.now();
  const finish = async (outcome: Outcome): Promise<number | null> => {
    const failed = !outcome.ok && (outcome.final || attempt >= webhookMaxAttempts(env));
    const delaySeconds = outcome.ok || failed ? 0 : webhookRetryDelaySeconds(env, attempt);
    await recordAttempt(db, deliveryId, outcome, Date.now() - started, { failed, delaySeconds });
    return outcome.ok || failed ? null : delaySeconds;
  };
  if (endpoint.deleted_at !== null) return finish({ ok: false, status: null, error: 'the endpoint was deleted', final: true });
  if (!endpoint.enabled) return finish({ ok: false, status: null, error: 'the endpoint is disabled', final: true });
  const allowLoopback = loopbackAllowance(env);
  const verdict = checkUpstreamUrl(endpoint.url, { allowLoopback });
  if (!verdict.allowed || (isProduction(env) && verdict.url.protocol !== 'https:')) {
    const reason = verdict.allowed ? 'the endpoint must use https' : verdict.reason;
    return finish({ ok: false, status: null, error: `refused: ${reason}`, final: true });
  }
  const body = JSON.stringify(await renderEvent(env, delivery.event));
  let secrets: string[];
  try {
    secrets = await signingSecrets(env, endpoint);
  } catch {
    return finish({ ok: false, status: null, error: 'the signing secret could not be opened: rotate it', final: true });
  }
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Faucet-Webhooks/1.0',
    [signatureHeaderName]: await signatureHeader(secrets, Math.floor(Date.now() / 1000), body),
    'faucet-event-id': delivery.event.id,
    'faucet-event-type': delivery.event.type,
    'faucet-delivery-id': delivery.id,
    'faucet-delivery-attempt': String(delivery.attempts + 1),
  };
  let response: Response;
  try {
    response = await outboundFetch(
      verdict.url.toString(),
      { method: 'POST', headers, body },
      { fetch, timeoutMs: deliveryTimeoutMs, allowLoopback },
    );
  } catch (error) {
    const reason = FaucetError.isInstance(error) ? error.message : 'the endpoint could not be reached';
    return finish({ ok: false, status: null, error: reason, final: false });
  }
  await response.body?.cancel().catch(() => undefined);
  if (response.status >= 200 && response.status < 300) return finish({ ok: true, status: response.status });
  return finish({ ok: false, status: response.status, error: `the endpoint answered HTTP ${response.status}`, final: false });
}

/** The queue handler's work: each message acknowledged, or retried with the delivery's delay. */
export async function deliverWebhookBatch(batch: MessageBatch<unknown>, env: Env, options: { fetch: FetchFunction }): Promise<void> {
  const logger = createLogger({ service: 'api', component: 'webhooks' }, env.LOG_LEVEL);
  for (const message of batch.messages) {
    const body = parseWebhookMessage(message.body);
    if (body === null) {
      logger.warn('webhook message dropped: malformed', { message_id: message.id });
      message.ack();
      continue;
    }
    // Only the tests' per-file databases travel in a message; elsewhere the worker's own is used.
    const databaseUrl = env.DATABASE_URL ?? (env.ENVIRONMENT === 'test' ? body.databaseUrl : undefined);
    try {
      const db = createHttpDatabase({ ...env, DATABASE_URL: databaseUrl });
      if (body.kind === 'relay') {
        await relayWebhookEvents(db, { queue: env.WEBHOOKS, databaseUrl: env.DATABASE_URL ? null : databaseUrl });
        message.ack();
        continue;
      }
      const retryIn = await deliverOnce(db, env, body.deliveryId, message.attempts, options.fetch);
      if (retryIn === null) message.ack();
      else message.retry({ delaySeconds: retryIn });
    } catch (error) {
      logger.error('webhook message failed', { kind: body.kind, error: error instanceof Error ? error.name : 'unknown' });
      message.retry({ delaySeconds: webhookRetryDelaySeconds(env, message.attempts) });
    }
  }
}
