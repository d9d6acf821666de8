import { generateText, streamText } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFaucetProvider, faucetMetadata } from '../ai/index.ts';
import { FaucetError } from '../src/errors.ts';
import { startFakeFaucet, type FakeFaucet } from './fake-faucet.ts';

let faucet: FakeFaucet;
beforeEach(async () => {
  faucet = await startFakeFaucet();
});
afterEach(() => faucet.close());

const provider = (feature?: string) =>
  createFaucetProvider({ publicAppId: faucet.publicAppId, user: { id: 'u-ai' }, baseUrl: faucet.url, retry: { maxRetries: 0 }, feature });
const chatCalls = () => faucet.requestsTo('/v1/chat/completions');

describe('@faucet/sdk/ai', () => {
  it('obtains a session, sends it as the bearer token and the default feature, and returns the faucet metadata', async () => {
    const result = await generateText({ model: provider('chat')('mock:echo'), prompt: 'hello', maxRetries: 0 });
    expect(result.text).toBe('echo: hello');
    expect(faucet.sessions).toHaveLength(1);
    const [call] = chatCalls();
    expect(call!.headers.authorization).toBe(`Bearer ${faucet.sessions[0]}`);
    expect(JSON.parse(call!.body)).toMatchObject({ model: 'mock:echo', feature: 'chat' });
    const metadata = faucetMetadata(result.providerMetadata);
    expect(metadata).toMatchObject({ route_mode: 'platform', provider: 'mock', model: 'echo', charge: { amount_usd: '0.00001234' } });
    expect(metadata?.request_id).toBe(call!.headers['x-request-id'] ?? metadata?.request_id);
  });

  it('lets providerOptions.faucet.feature name the feature of one call', async () => {
    const result = await generateText({
      model: provider('no-such-feature')('mock:echo'),
      prompt: 'hi',
      providerOptions: { faucet: { feature: 'chat' } },
      maxRetries: 0,
    });
    expect(result.text).toBe('echo: hi');
    expect(JSON.parse(chatCalls()[0]!.body).feature).toBe('chat');
  });

  it('gets a new session when the gateway refuses the cached one (401) and sends the call once more', async () => {
    const model = provider('chat')('mock:echo');
    await generateText({ model, prompt: 'first', maxRetries: 0 });
    faucet.expireAllSessions();
    const result = await generateText({ model, prompt: 'second', maxRetries: 0 });
    expect(result.text).toBe('echo: second');
    expect(faucet.sessions).toHaveLength(2);
    const tokens = chatCalls().map((call) => call.headers.authorization);
    expect(tokens).toEqual([`Bearer ${faucet.sessions[0]}`, `Bearer ${faucet.sessions[0]}`, `Bearer ${faucet.sessions[1]}`]);
  });

  it('streams the text and reads the faucet metadata from the last event', async () => {
    const result = streamText({ model: provider('chat')('mock:echo'), prompt: 'stream me', maxRetries: 0 });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(text).toBe('echo: stream me');
    expect(faucetMetadata(await result.providerMetadata)).toMatchObject({ provider: 'mock', charge: { currency: 'USD' } });
  });

  it('surfaces a refusal as an AI SDK error carrying the status, and bad settings as a FaucetError', async () => {
    const failure = await generateText({ model: provider('no-such-feature')('mock:echo'), prompt: 'x', maxRetries: 0 }).catch(
      (error: unknown) => error,
    );
    expect((failure as { statusCode?: number }).statusCode).toBe(404);
    expect(() => createFaucetProvider({ publicAppId: '', baseUrl: faucet.url, user: { id: 'u' } })).toThrow(FaucetError);
    expect(() => createFaucetProvider({ publicAppId: 'app', baseUrl: faucet.url })).toThrow(/user\.id/);
    expect(faucetMetadata({ other: {} })).toBeUndefined();
  });
});
