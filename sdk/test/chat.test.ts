import { afterEach, describe, expect, it } from 'vitest';
import type { ChatStreamPart } from '../src/index.ts';
import { clientFor } from './client-for.ts';
import { startFakeFaucet, type FakeFaucet } from './fake-faucet.ts';
import { startScriptedGateway } from './scripted-gateway.ts';

let faucet: FakeFaucet | undefined;
const others: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await faucet?.close();
  faucet = undefined;
  await Promise.all(others.splice(0).map((server) => server.close()));
});

async function collect(stream: AsyncIterable<ChatStreamPart>): Promise<ChatStreamPart[]> {
  const parts: ChatStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe('chat', () => {
  it('sends the feature, model, route mode and messages, and returns the completion with its metadata', async () => {
    faucet = await startFakeFaucet();
    const answer = await clientFor(faucet.url).chat({ feature: 'chat', model: 'mock:echo', routeMode: 'platform', input: 'hello there' });
    expect(JSON.parse(faucet.requestsTo('/v1/chat/completions')[0]!.body)).toEqual({
      feature: 'chat',
      model: 'mock:echo',
      route_mode: 'platform',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(answer.choices[0]!.message.content).toBe('echo: hello there');
    expect(answer.faucet).toMatchObject({
      route_mode: 'platform',
      model: 'echo',
      input_tokens: 3,
      output_tokens: 4,
      charge: { amount_usd: '0.00001234' },
    });
  });

  it('accepts a message list and { messages }', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url);
    const messages = [
      { role: 'system' as const, content: 'be brief' },
      { role: 'user' as const, content: 'one' },
    ];
    await client.chat({ feature: 'chat', input: messages });
    await client.chat({ feature: 'chat', input: { messages } });
    for (const request of faucet.requestsTo('/v1/chat/completions')) expect(JSON.parse(request.body).messages).toEqual(messages);
  });

  it('streams deltas in order and ends with the metadata', async () => {
    faucet = await startFakeFaucet();
    const parts = await collect(clientFor(faucet.url).chatStream({ feature: 'chat', input: 'a b c' }));
    const last = parts.at(-1)!;
    expect(last.type).toBe('metadata');
    expect(last.type === 'metadata' && last.faucet.charge?.amount_usd).toBe('0.00001234');
    const text = parts.flatMap((part) => (part.type === 'delta' ? [part.delta] : [])).join('');
    expect(text).toBe('echo: a b c');
    expect(parts.filter((part) => part.type === 'delta').length).toBeGreaterThan(1);
    expect(JSON.parse(faucet.requestsTo('/v1/chat/completions')[0]!.body).stream).toBe(true);
  });

  it('fails a stream that ends without the metadata', async () => {
    const server = await startScriptedGateway([
      (_, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(`data: ${JSON.stringify({ choices: [{ delta: { content: 'x' } }] })}\n\ndata: [DONE]\n\n`);
      },
    ]);
    others.push(server);
    await expect(collect(clientFor(server.url).chatStream({ feature: 'chat', input: 'x' }))).rejects.toMatchObject({
      code: 'invalid_response',
    });
  });

  it('turns an error event inside a stream into a typed error', async () => {
    const server = await startScriptedGateway([
      (_, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(`data: ${JSON.stringify({ error: { code: 'upstream_timeout', message: 'slow', request_id: 'req_s' } })}\n\n`);
      },
    ]);
    others.push(server);
    await expect(collect(clientFor(server.url).chatStream({ feature: 'chat', input: 'x' }))).rejects.toMatchObject({
      code: 'upstream_timeout',
      status: 504,
      requestId: 'req_s',
    });
  });

  it('runFeature returns text, usage and metadata; JSON input travels as one user message', async () => {
    faucet = await startFakeFaucet();
    const result = await clientFor(faucet.url).runFeature({ feature: 'chat', input: { topic: 'tides', words: 3 } });
    expect(result.text).toBe('echo: {"topic":"tides","words":3}');
    expect(result.usage).toEqual({ input_tokens: 3, output_tokens: 4, estimated: false });
    expect(result.faucet.request_id).toMatch(/^sdk_/);
  });

  it('reads the wallet and recent usage', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url);
    const before = await client.getWallet();
    await client.chat({ feature: 'chat', input: 'x' });
    const after = await client.getWallet();
    expect(before.balance_usd).toBe('10.00000000');
    expect(after.balance_usd).toBe('9.99998766');
    const usage = await client.listUsage({ limit: 5 });
    expect(usage[0]).toMatchObject({ feature_key: 'chat', charged_usd: '0.00001234' });
    expect(faucet.requestsTo('/v1/user/usage')[0]!.path).toBe('/v1/user/usage?limit=5');
  });
});
