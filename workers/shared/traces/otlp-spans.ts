/**
 * One OTLP span per call (docs/traces.md), in OTLP/HTTP's JSON encoding, named by the OpenTelemetry
 * GenAI semantic conventions plus `faucet.*`. Built from the request log's row and its usage record:
 * what happened and what it cost, never what was said (the row holds no content to begin with).
 */

/** A request-log row with its usage record's tokens and charge (null: the call left no booking). */
export interface TracedCall {
  id: string;
  surface: string;
  requestedModel: string;
  provider: string | null;
  model: string | null;
  routeMode: string | null;
  featureKey: string;
  outcome: string;
  errorCode: string | null;
  stream: boolean;
  totalMs: number | null;
  createdAt: Date;
  inputTokens: number | null;
  outputTokens: number | null;
  /** The usage record's retail, as the database writes it (8 decimals). */
  chargeUsd: string | null;
  estimated: boolean | null;
}

type AnyValue = { stringValue: string } | { intValue: string } | { boolValue: boolean };
interface KeyValue {
  key: string;
  value: AnyValue;
}

/** The conventions' names of the providers whose catalog name differs from it. */
const conventionProviderNames: Record<string, string> = {
  google: 'gcp.gemini',
  mistral: 'mistral_ai',
  xai: 'x_ai',
  azure: 'azure.ai.openai',
};

const spanKindClient = 3;
const statusUnset = 0;
const statusError = 2;

function attribute(key: string, value: string | number | boolean | null | undefined): KeyValue[] {
  if (value === null || value === undefined) return [];
  if (typeof value === 'boolean') return [{ key, value: { boolValue: value } }];
  if (typeof value === 'number') return [{ key, value: { intValue: String(Math.trunc(value)) } }];
  return [{ key, value: { stringValue: value } }];
}

const hex = (id: string) => id.replace(/-/g, '').toLowerCase();

/** Unix nanoseconds as OTLP's JSON writes a fixed64: a decimal string. */
const unixNanos = (ms: number) => (BigInt(Math.trunc(ms)) * 1_000_000n).toString();

/**
 * The call's span. The trace id is the call id and the span id its last 16 hex digits, so a span
 * delivered twice (a retried flush or delivery) is the same span at the receiver.
 */
export function callSpan(call: TracedCall) {
  const operation = call.surface === 'embeddings' ? 'embeddings' : 'chat';
  const failed = call.outcome === 'upstream_error' || call.outcome === 'refused';
  const start = call.createdAt.getTime();
  const attributes = [
    ...attribute('gen_ai.operation.name', operation),
    ...attribute('gen_ai.provider.name', call.provider === null ? null : (conventionProviderNames[call.provider] ?? call.provider)),
    ...attribute('gen_ai.request.model', call.requestedModel),
    ...attribute('gen_ai.response.model', failed ? null : call.model),
    ...attribute('gen_ai.usage.input_tokens', call.inputTokens),
    ...attribute('gen_ai.usage.output_tokens', call.outputTokens),
    ...attribute('error.type', failed ? (call.errorCode ?? call.outcome) : null),
    ...attribute('faucet.call_id', call.id),
    ...attribute('faucet.surface', call.surface),
    ...attribute('faucet.outcome', call.outcome),
    ...attribute('faucet.route', call.routeMode),
    ...attribute('faucet.feature', call.featureKey),
    ...attribute('faucet.charge_usd', call.chargeUsd ?? '0.00000000'),
    ...attribute('faucet.usage_estimated', call.estimated),
    ...attribute('faucet.stream', call.stream),
  ];
  return {
    traceId: hex(call.id),
    spanId: hex(call.id).slice(-16),
    name: call.model === null ? operation : `${operation} ${call.model}`,
    kind: spanKindClient,
    startTimeUnixNano: unixNanos(start),
    endTimeUnixNano: unixNanos(start + (call.totalMs ?? 0)),
    attributes,
    status: failed ? { code: statusError, message: call.errorCode ?? call.outcome } : { code: statusUnset },
  };
}

/** An OTLP/HTTP JSON export request (`POST …/v1/traces`) of one app's calls. */
export function otlpTraceRequest(publicAppId: string, calls: readonly TracedCall[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [...attribute('service.name', 'faucet'), ...attribute('faucet.app', publicAppId)] },
        scopeSpans: [{ scope: { name: 'faucet.gateway' }, spans: calls.map(callSpan) }],
      },
    ],
  };
}
