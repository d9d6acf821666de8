import { afterEach, describe, expect, it } from 'vitest';
import { FaucetError, type ChatStreamPart } from '../src/index.ts';
import { clientFor } from './client-for.ts';
import { sendError } from './fake-server.ts';
import { hang, startScriptedGateway } from './scripted-gateway.ts';

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function caught(promise: Promise<unknown>): Promise<FaucetError> {
  const thrown = await promise.then(
    () => new Error('expected a failure'),
    (error: unknown) => error,
  );
  if (!FaucetError.isInstance(thrown)) throw thrown;
  return thrown;
}

/** Waits until the server has seen `count` chat requests. */
async function untilChatRequests(server: { chatRequests(): unknown[] }, count: number): Promise<void> {
  while (server.chatRequests().length < count) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Answers the stream's head and one delta, then goes silent. */
const oneDeltaThenSilence = (_: unknown, response: import('node:http').ServerResponse) => {
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'first ' } }] })}\n\n`);
  return new Promise<void>(() => undefined);
};

describe('abort', () => {
  it('aborts a request in flight with code aborted', async () => {
    const server = await startScriptedGateway([hang]);
    servers.push(server);
    const controller = new AbortController();
    const pending = caught(clientFor(server.url).chat({ feature: 'chat', input: 'hi', signal: controller.signal }));
    await untilChatRequests(server, 1);
    controller.abort();
    expect(await pending).toMatchObject({ code: 'aborted', status: 0 });
  });

  it('sends nothing when the signal has already fired', async () => {
    const server = await startScriptedGateway([hang]);
    servers.push(server);
    const error = await caught(clientFor(server.url).chat({ feature: 'chat', input: 'hi', signal: AbortSignal.abort() }));
    expect(error.code).toBe('aborted');
    expect(server.requests).toHaveLength(0);
  });

  it('interrupts the wait before a retry', async () => {
    const server = await startScriptedGateway([
      (_, response) => sendError(response, 429, 'rate_limited', 'req_429', { 'retry-after': '3600' }),
    ]);
    servers.push(server);
    const controller = new AbortController();
    const client = clientFor(server.url, { retry: { maxDelayMs: 7_200_000 }, onRetry: () => controller.abort() });
    const error = await caught(client.chat({ feature: 'chat', input: 'hi', signal: controller.signal }));
    expect(error.code).toBe('aborted');
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('stops a stream after the deltas already received', async () => {
    const server = await startScriptedGateway([oneDeltaThenSilence]);
    servers.push(server);
    const controller = new AbortController();
    const parts: ChatStreamPart[] = [];
    const consume = async () => {
      for await (const part of clientFor(server.url).chatStream({ feature: 'chat', input: 'hi', signal: controller.signal })) {
        parts.push(part);
        controller.abort();
      }
    };
    expect(await caught(consume())).toMatchObject({ code: 'aborted' });
    expect(parts).toEqual([{ type: 'delta', delta: 'first ' }]);
  });
});

describe('timeouts', () => {
  it('end a request that gets no answer with code timeout, and do not retry it', async () => {
    const server = await startScriptedGateway([hang]);
    servers.push(server);
    const error = await caught(clientFor(server.url, { timeoutMs: 150 }).chat({ feature: 'chat', input: 'hi' }));
    expect(error).toMatchObject({ code: 'timeout', status: 0 });
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('end a stream that goes silent between chunks', async () => {
    const server = await startScriptedGateway([oneDeltaThenSilence]);
    servers.push(server);
    const client = clientFor(server.url, { timeoutMs: 60_000, streamIdleTimeoutMs: 150 });
    const parts: ChatStreamPart[] = [];
    const consume = async () => {
      for await (const part of client.chatStream({ feature: 'chat', input: 'hi' })) parts.push(part);
    };
    expect(await caught(consume())).toMatchObject({ code: 'timeout' });
    expect(parts).toEqual([{ type: 'delta', delta: 'first ' }]);
  });
});
