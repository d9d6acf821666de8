import { afterEach, describe, expect, it } from 'vitest';
import { ChatStore, FeatureStore, UsageStore, parseJsonInput } from '@faucet/sdk/react';
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

describe('ChatStore', () => {
  it('streams the answer into the conversation and sends the whole history on the next turn', async () => {
    faucet = await startFakeFaucet();
    let settled = 0;
    const store = new ChatStore(clientFor(faucet.url), { feature: 'chat', model: 'mock:echo', onSettled: () => settled++ });
    const snapshots: number[] = [];
    store.subscribe(() => snapshots.push(store.getSnapshot().messages.at(-1)?.content.length ?? 0));
    await store.send('one two three');
    await store.send('four');
    const state = store.getSnapshot();
    expect(state.messages.map(({ role, content, status }) => ({ role, content, status }))).toEqual([
      { role: 'user', content: 'one two three', status: 'done' },
      { role: 'assistant', content: 'echo: one two three', status: 'done' },
      { role: 'user', content: 'four', status: 'done' },
      { role: 'assistant', content: 'echo: four', status: 'done' },
    ]);
    expect(state.messages[1]!.faucet?.request_id).toMatch(/^sdk_/);
    expect(new Set(snapshots).size).toBeGreaterThan(3); // the answer grew delta by delta
    expect(JSON.parse(faucet.requestsTo('/v1/chat/completions')[1]!.body).messages).toHaveLength(3);
    expect(settled).toBe(2);
    expect(state.busy).toBe(false);
  });

  it('shows a server error with its code and request ID and drops the empty answer', async () => {
    faucet = await startFakeFaucet();
    const store = new ChatStore(clientFor(faucet.url), { feature: 'chat', model: 'mock:unknown' });
    await store.send('hi');
    const state = store.getSnapshot();
    expect(state.error).toMatchObject({ code: 'invalid_request', requestId: expect.stringMatching(/^sdk_/) });
    expect(state.messages.map((message) => message.role)).toEqual(['user']);
  });

  it('stop() ends the answer as stopped, without an error', async () => {
    const server = await startScriptedGateway([
      (_, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'partial' } }] })}\n\n`);
        return new Promise(() => undefined);
      },
    ]);
    others.push(server);
    const store = new ChatStore(clientFor(server.url), { feature: 'chat' });
    store.subscribe(() => {
      if (store.getSnapshot().messages.at(-1)?.content === 'partial') store.stop();
    });
    await store.send('hi');
    expect(store.getSnapshot().messages.at(-1)).toMatchObject({ content: 'partial', status: 'stopped' });
    expect(store.getSnapshot().error).toBeUndefined();
  });
});

describe('FeatureStore', () => {
  it('shows invalid JSON as an error without calling the server', async () => {
    faucet = await startFakeFaucet();
    const store = new FeatureStore(clientFor(faucet.url), { feature: 'chat' });
    await store.run('{"topic": ');
    expect(store.getSnapshot().error).toMatchObject({ code: 'invalid_json' });
    expect(faucet.requests).toHaveLength(0);
    expect(parseJsonInput('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
  });

  it('runs the feature and keeps the result with its metadata', async () => {
    faucet = await startFakeFaucet();
    const store = new FeatureStore(clientFor(faucet.url), { feature: 'chat' });
    await store.run('{"topic":"tides"}');
    expect(store.getSnapshot().result).toMatchObject({ text: 'echo: {"topic":"tides"}', faucet: { route_mode: 'platform' } });
  });
});

describe('UsageStore', () => {
  it('loads the wallet and recent usage, and shows the balance going down after a call', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url);
    const store = new UsageStore(client, 5);
    await store.refresh();
    expect(store.getSnapshot().wallet?.balance_usd).toBe('10.00000000');
    await client.chat({ feature: 'chat', input: 'x' });
    await store.refresh();
    expect(store.getSnapshot()).toMatchObject({
      wallet: { balance_usd: '9.99998766' },
      usage: [{ charged_usd: '0.00001234' }],
      loading: false,
    });
  });
});
