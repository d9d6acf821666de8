/**
 * The traces queue's consumer (docs/traces.md): for each message, the app's export and its calls'
 * request-log rows with their usage records in one statement, one OTLP/HTTP JSON POST through the one
 * outbound fetch (its address guard: never a private, loopback or link-local target in production),
 * and the outcome kept on the export. A failure the endpoint may recover from is retried by the queue
 * with a growing delay, up to the consumer's max_retries, then the message goes to the dead-letter
 * queue; a refused endpoint or an answer that says the request itself is wrong is not retried.
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
import { otlpTraceRequest, type TracedCall } from './otlp-spans.ts';
import { openTraceHeaders, recordTraceDelivery } from './trace-export.ts';
import { parseTraceMessage, type TraceMessage } from './trace-message.ts';

const deliveryTimeoutMs = 10_000;
const longestRetryDelaySeconds = 300;

/** 5 s, 10 s, 20 s, … at most 5 minutes (TRACE_RETRY_BASE_SECONDS sets the first). */
function retryDelaySeconds(env: Env, attempts: number): number {
  return Math.min(longestRetryDelaySeconds, intSetting(env.TRACE_RETRY_BASE_SECONDS, 5) * 2 ** Math.max(0, attempts - 1));
}

type Verdict = 'sent' | 'dropped' | 'retry';

interface ExportWithCalls {
  endpoint: string;
  public_app_id: string;
  headers_ciphertext: string | null;
  headers_iv: string | null;
  headers_key_version: number | null;
  calls: CallJson[] | string;
}

interface CallJson {
  id: string;
  surface: string;
  requested_model: string;
  provider: string | null;
  model: string | null;
  route_mode: string | null;
  feature_key: string;
  outcome: string;
  error_code: string | null;
  stream: boolean;
  total_ms: number | null;
  created_at: string;
  input_tokens: number | null;
  output_tokens: number | null;
  retail_usd: string | null;
  estimated: boolean | null;
}

/** The app's enabled export and the message's calls of that app, each with its usage record (none: null). */
async function loadExport(db: SqlDatabase, message: TraceMessage): Promise<{ export: ExportWithCalls; calls: TracedCall[] } | null> {
  const [row] = await queryRows<ExportWithCalls>(
    db,
    sql`select e.endpoint, a.public_app_id, e.headers_ciphertext, e.headers_iv, e.headers_key_version,
               coalesce((select jsonb_agg(jsonb_build_object(
                         'id', l.id, 'surface', l.surface, 'requested_model', l.requested_model, 'provider', l.provider,
                         'model', l.model, 'route_mode', l.route_mode, 'feature_key', l.feature_key, 'outcome', l.outcome,
                         'error_code', l.error_code, 'stream', l.stream, 'total_ms', l.total_ms, 'created_at', l.created_at,
                         'input_tokens', u.input_tokens, 'output_tokens', u.output_tokens, 'retail_usd', u.retail_usd::text,
                         'estimated', u.estimated) order by l.created_at)
                           from gateway_call_log l left join usage_events u on u.call_id = l.id
                          where l.app_id = e.app_id
                            and l.id in (select jsonb_array_elements_text(${JSON.stringify(message.callIds)}::jsonb)::uuid)), '[]'::jsonb) as calls
          from app_trace_exports e join apps a on a.id = e.app_id
         where e.app_id = ${message.appId}::uuid and e.enabled`,
  );
  if (row === undefined) return null;
  const calls = (typeof row.calls === 'string' ? (JSON.parse(row.calls) as CallJson[]) : row.calls).map(
    (call): TracedCall => ({
      id: call.id,
      surface: call.surface,
      requestedModel: call.requested_model,
      provider: call.provider,
      model: call.model,
      routeMode: call.route_mode,
      featureKey: call.feature_key,
      outcome: call.outcome,
      errorCode: call.error_code,
      stream: call.stream,
      totalMs: call.total_ms,
      createdAt: new Date(call.created_at),
      inputTokens: call.input_tokens,
      outputTokens: call.output_tokens,
      chargeUsd: call.retail_usd,
      estimated: call.estimated,
    }),
  );
  return { export: row, calls };
}

/** Sends one message's spans; says whether the queue should forget it or try it again. */
async function deliver(db: SqlDatabase, env: Env, message: TraceMessage, fetch: FetchFunction): Promise<Verdict> {
  const loaded = await loadExport(db, message);
  if (loaded === null || loaded.calls.length === 0) return 'dropped';
  const { export: target, calls } = loaded;
  const allowLoopback = loopbackAllowance(env);
  const verdict = checkUpstreamUrl(target.endpoint, { allowLoopback });
  if (!verdict.allowed || (isProduction(env) && verdict.url.protocol !== 'https:')) {
    const reason = verdict.allowed ? 'the endpoint must use https' : verdict.reason;
    await recordTraceDelivery(db, message.appId, { ok: false, error: `refused: ${reason}` });
    return 'dropped';
  }
  let headers: Record<string, string>;
  try {
    headers = await openTraceHeaders(env, message.appId, {
      ciphertext: target.headers_ciphertext,
      iv: target.headers_iv,
      keyVersion: target.headers_key_version,
    });
  } catch {
    // Sealed under a key version no longer configured (docs/traces.md): PUT the export again.
    await recordTraceDelivery(db, message.appId, { ok: false, error: 'the stored headers could not be opened: set the export again' });
    return 'dropped';
  }
  let response: Response;
  try {
    response = await outboundFetch(
      verdict.url.toString(),
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(otlpTraceRequest(target.public_app_id, calls)),
      },
      { fetch, timeoutMs: deliveryTimeoutMs, allowLoopback },
    );
  } catch (error) {
    const reason = FaucetError.isInstance(error) ? error.message : 'the endpoint could not be reached';
    await recordTraceDelivery(db, message.appId, { ok: false, error: reason });
    return 'retry';
  }
  await response.body?.cancel().catch(() => undefined);
  if (response.ok) {
    await recordTraceDelivery(db, message.appId, { ok: true });
    return 'sent';
  }
  await recordTraceDelivery(db, message.appId, { ok: false, error: `the endpoint answered HTTP ${response.status}` });
  // OTLP/HTTP: 429, 502, 503 and 504 are worth retrying (and a timeout); any other answer will not change.
  return [408, 429, 500, 502, 503, 504].includes(response.status) ? 'retry' : 'dropped';
}

/** The queue handler's work: each message acknowledged, or retried with a delay that grows with its attempts. */
export async function deliverTraceBatch(batch: MessageBatch<unknown>, env: Env, options: { fetch: FetchFunction }): Promise<void> {
  const logger = createLogger({ service: 'api', component: 'traces' }, env.LOG_LEVEL);
  for (const message of batch.messages) {
    const body = parseTraceMessage(message.body);
    if (body === null) {
      logger.warn('trace message dropped: malformed', { message_id: message.id });
      message.ack();
      continue;
    }
    // Only the tests' per-file databases travel in a message; elsewhere the worker's own is used.
    const databaseUrl = env.DATABASE_URL ?? (env.ENVIRONMENT === 'test' ? body.databaseUrl : undefined);
    let verdict: Verdict;
    try {
      verdict = await deliver(createHttpDatabase({ ...env, DATABASE_URL: databaseUrl }), env, body, options.fetch);
    } catch (error) {
      logger.error('trace delivery failed', { app_id: body.appId, error: error instanceof Error ? error.name : 'unknown' });
      verdict = 'retry';
    }
    if (verdict === 'retry') {
      logger.warn('trace delivery will be retried', { app_id: body.appId, attempts: message.attempts });
      message.retry({ delaySeconds: retryDelaySeconds(env, message.attempts) });
    } else {
      message.ack();
    }
  }
}
