import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import type {} from '../../../tests/setup/node-stack.ts';
import { createFaucet, FaucetError, type ChatStreamPart } from '../../src/index.ts';
import { backendSession } from '../real-stack.ts';

/** Against the real local stack started by the node project's global setup. */
const stack = inject('stack');

function client(userId = stack.demoExternalUserId, publicAppId = stack.publicAppId) {
  // The demo app's sessions come from its backend; an unknown app is asked directly (and answers 404).
  const session = publicAppId === stack.publicAppId ? backendSession(stack, userId) : undefined;
  return createFaucet({ publicAppId, user: { id: userId }, session, baseUrl: stack.apiUrl, gatewayBaseUrl: stack.gatewayUrl });
}

async function failure(promise: Promise<unknown>): Promise<FaucetError> {
  const thrown = await promise.then(
    () => new Error('expected a failure'),
    (error: unknown) => error,
  );
  if (!FaucetError.isInstance(thrown)) throw thrown;
  return thrown;
}

describe('SDK against the real gateway', () => {
  it('chats with mock:echo and returns the completion with its metadata and the request ID it sent', async () => {
    const answer = await client().chat({ feature: stack.featureKey, model: 'mock:echo', input: 'Hello SDK' });
    expect(answer.choices[0]!.message.content).toBe('Echo: Hello SDK');
    expect(answer.faucet).toMatchObject({ route_mode: 'platform', provider: 'mock', model: 'echo', estimated: false });
    expect(answer.faucet.request_id).toMatch(/^sdk_[0-9a-f]{32}$/);
    expect(answer.faucet.input_tokens).toBeGreaterThan(0);
    expect(answer.faucet.charge?.amount_usd).toMatch(/^\d+\.\d{8}$/);
  });

  it('streams the same text as deltas and ends with the metadata', async () => {
    const parts: ChatStreamPart[] = [];
    for await (const part of client().chatStream({ feature: stack.featureKey, model: 'mock:echo', input: 'stream me please' }))
      parts.push(part);
    const text = parts.flatMap((part) => (part.type === 'delta' ? [part.delta] : [])).join('');
    expect(text).toBe('Echo: stream me please');
    expect(parts.filter((part) => part.type === 'metadata')).toHaveLength(1);
    expect(parts.at(-1)).toEqual({ type: 'metadata', faucet: expect.objectContaining({ route_mode: 'platform', model: 'echo' }) });
  });

  it('runFeature returns the text, usage and metadata', async () => {
    const result = await client().runFeature({ feature: stack.featureKey, model: 'mock:echo', input: { task: 'summarise' } });
    expect(result.text).toBe('Echo: {"task":"summarise"}');
    expect(result.usage).toEqual({
      input_tokens: result.faucet.input_tokens,
      output_tokens: result.faucet.output_tokens,
      estimated: false,
    });
  });

  it('throws a typed 4xx error with the request ID of the answer, without retrying', async () => {
    const error = await failure(client().chat({ feature: stack.featureKey, model: 'mock:no-such-model', input: 'x' }));
    expect(error).toMatchObject({ name: 'FaucetError', code: 'invalid_request', status: 400 });
    expect(error.requestId).toMatch(/^sdk_/);
  });

  it('throws insufficient_balance (402) for an end user whose wallet is empty', async () => {
    const error = await failure(client(`sdk-broke-${randomUUID()}`).chat({ feature: stack.featureKey, model: 'mock:echo', input: 'x' }));
    expect(error).toMatchObject({ code: 'insufficient_balance', status: 402 });
  });

  it('throws a typed error when the app does not exist', async () => {
    const error = await failure(client(stack.demoExternalUserId, 'app_does_not_exist').createSession());
    expect(error.status).toBeGreaterThanOrEqual(400);
    expect(error.status).toBeLessThan(500);
    expect(error.requestId).toBeTruthy();
  });

  it('sends nothing and throws aborted for a signal that already fired', async () => {
    const error = await failure(client().chat({ feature: stack.featureKey, model: 'mock:echo', input: 'x', signal: AbortSignal.abort() }));
    expect(error.code).toBe('aborted');
  });
});

describe('SDK against the real control API', () => {
  it('shows the wallet balance going down and the call in recent usage', async () => {
    const faucet = client();
    const before = await faucet.getWallet();
    const answer = await faucet.chat({ feature: stack.featureKey, model: 'mock:echo', input: 'spend a little' });
    const after = await faucet.getWallet();
    const units = (usd: string) => BigInt(usd.replace('.', ''));
    expect(units(before.balance_usd) - units(after.balance_usd)).toBe(units(answer.faucet.charge!.amount_usd));
    const usage = await faucet.listUsage({ limit: 5 });
    expect(usage.find((record) => record.request_id === answer.faucet.request_id)).toMatchObject({
      route_mode: 'platform',
      charged_usd: answer.faucet.charge!.amount_usd,
    });
  });
});
