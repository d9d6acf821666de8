import { describe, expect, it } from 'vitest';
import { callSpan, otlpTraceRequest, type TracedCall } from './otlp-spans.ts';
import { traceMessages } from './trace-message.ts';

const answered: TracedCall = {
  id: '0193a6f2-7c1e-7b00-8000-1234567890ab',
  surface: 'embeddings',
  requestedModel: 'google:text-embedding-004',
  provider: 'google',
  model: 'text-embedding-004',
  routeMode: 'byok',
  featureKey: 'search',
  outcome: 'answered',
  errorCode: null,
  stream: false,
  totalMs: 250,
  createdAt: new Date('2026-11-28T05:00:00.123Z'),
  inputTokens: 42,
  outputTokens: 0,
  chargeUsd: '0.00000000',
  estimated: true,
};

const attributeOf = (span: ReturnType<typeof callSpan>, key: string) => span.attributes.find((entry) => entry.key === key)?.value;

describe('callSpan', () => {
  it('names an embeddings call by the conventions, with OTLP JSON ids, times and AnyValues', () => {
    const span = callSpan(answered);
    expect(span.traceId).toBe('0193a6f27c1e7b0080001234567890ab');
    expect(span.spanId).toBe('80001234567890ab');
    expect(span.name).toBe('embeddings text-embedding-004');
    expect(span.kind).toBe(3);
    expect(span.startTimeUnixNano).toBe('1795842000123000000');
    expect(span.endTimeUnixNano).toBe('1795842000373000000');
    expect(attributeOf(span, 'gen_ai.operation.name')).toEqual({ stringValue: 'embeddings' });
    expect(attributeOf(span, 'gen_ai.provider.name')).toEqual({ stringValue: 'gcp.gemini' });
    expect(attributeOf(span, 'gen_ai.usage.input_tokens')).toEqual({ intValue: '42' });
    expect(attributeOf(span, 'faucet.charge_usd')).toEqual({ stringValue: '0.00000000' });
    expect(attributeOf(span, 'faucet.usage_estimated')).toEqual({ boolValue: true });
    expect(attributeOf(span, 'error.type')).toBeUndefined();
    expect(span.status).toEqual({ code: 0 });
  });

  it('marks a failed call with error.type and an error status, and no response model', () => {
    const span = callSpan({
      ...answered,
      surface: 'messages',
      outcome: 'upstream_error',
      errorCode: 'upstream_timeout',
      inputTokens: null,
      outputTokens: null,
      chargeUsd: null,
      estimated: null,
    });
    expect(attributeOf(span, 'gen_ai.operation.name')).toEqual({ stringValue: 'chat' });
    expect(attributeOf(span, 'error.type')).toEqual({ stringValue: 'upstream_timeout' });
    expect(attributeOf(span, 'gen_ai.response.model')).toBeUndefined();
    expect(attributeOf(span, 'gen_ai.usage.input_tokens')).toBeUndefined();
    expect(attributeOf(span, 'faucet.charge_usd')).toEqual({ stringValue: '0.00000000' });
    expect(span.status).toEqual({ code: 2, message: 'upstream_timeout' });
  });

  it('puts one app’s spans under one resource', () => {
    const request = otlpTraceRequest('app_demo', [answered, { ...answered, id: '0193a6f2-7c1e-7b00-8000-ffffffffffff' }]);
    expect(request.resourceSpans).toHaveLength(1);
    expect(request.resourceSpans[0]!.scopeSpans[0]!.spans).toHaveLength(2);
    expect(request.resourceSpans[0]!.resource.attributes).toContainEqual({ key: 'faucet.app', value: { stringValue: 'app_demo' } });
  });
});

describe('traceMessages', () => {
  it('names only the traced apps’ calls, one message per app', () => {
    const logs = [
      { id: 'c1', app_id: 'a' },
      { id: 'c2', app_id: 'b' },
      { id: 'c3', app_id: 'a' },
    ];
    expect(traceMessages(logs, ['a'])).toEqual([{ appId: 'a', callIds: ['c1', 'c3'] }]);
    expect(traceMessages(logs, [])).toEqual([]);
  });
});
