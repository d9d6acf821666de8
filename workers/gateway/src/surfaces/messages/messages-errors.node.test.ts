import { describe, expect, it } from 'vitest';
import { type ErrorCode, errorStatus, FaucetError } from '#shared/wire/errors.ts';
import { anthropicErrorTypes, messagesErrorResponse } from './messages-errors.ts';

describe("errors in Anthropic's envelope", () => {
  it.each([
    ['invalid_request', 400, 'invalid_request_error'],
    ['unauthorized', 401, 'authentication_error'],
    ['insufficient_balance', 402, 'billing_error'],
    ['budget_exceeded', 402, 'billing_error'],
    ['forbidden', 403, 'permission_error'],
    ['not_found', 404, 'not_found_error'],
    ['conflict', 409, 'invalid_request_error'],
    ['invalid_state', 409, 'invalid_request_error'],
    ['payload_too_large', 413, 'request_too_large'],
    ['rate_limited', 429, 'rate_limit_error'],
    ['internal_error', 500, 'api_error'],
    ['upstream_error', 502, 'api_error'],
    ['unavailable', 503, 'overloaded_error'],
    ['upstream_timeout', 504, 'timeout_error'],
  ] as const)('%s keeps its status %i and reads as %s', async (code, status, type) => {
    const response = messagesErrorResponse(new FaucetError(code, 'what went wrong'), 'req_1');
    expect(response.status).toBe(status);
    expect(response.headers.get('x-request-id')).toBe('req_1');
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type, code, message: 'what went wrong', request_id: 'req_1' },
      request_id: 'req_1',
    });
  });

  it('has a type for every Faucet code', () => {
    expect(Object.keys(anthropicErrorTypes).sort()).toEqual((Object.keys(errorStatus) as ErrorCode[]).sort());
  });

  it('keeps the error’s own headers, such as retry-after', () => {
    const response = messagesErrorResponse(new FaucetError('rate_limited', 'slow down', { headers: { 'retry-after': '3' } }), 'req_2');
    expect(response.headers.get('retry-after')).toBe('3');
  });

  it('never shows the internals of an unexpected error', async () => {
    const response = messagesErrorResponse(new Error('password=hunter2 at db.ts:12'), 'req_3');
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).not.toContain('hunter2');
    expect(JSON.parse(text).error).toEqual({ type: 'api_error', code: 'internal_error', message: 'Internal error', request_id: 'req_3' });
  });
});
