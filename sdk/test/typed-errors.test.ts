import { afterEach, describe, expect, it } from 'vitest';
import { FaucetError } from '../src/index.ts';
import { clientFor } from './client-for.ts';
import { sendError } from './fake-server.ts';
import { startScriptedGateway } from './scripted-gateway.ts';

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function failure(promise: Promise<unknown>): Promise<FaucetError> {
  const thrown = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!FaucetError.isInstance(thrown)) throw new Error(`expected a FaucetError, got ${String(thrown)}`);
  return thrown;
}

describe('typed errors', () => {
  it('carry the code, status and request ID of the error envelope', async () => {
    const server = await startScriptedGateway([(_, response) => sendError(response, 402, 'insufficient_balance', 'req_broke_1')]);
    servers.push(server);
    const error = await failure(clientFor(server.url).chat({ feature: 'chat', input: 'hi' }));
    expect(error).toBeInstanceOf(FaucetError);
    expect(error).toMatchObject({ name: 'FaucetError', code: 'insufficient_balance', status: 402, requestId: 'req_broke_1' });
  });

  it('fall back to the status and the x-request-id header when the body is not an envelope', async () => {
    const server = await startScriptedGateway([
      (_, response) => {
        response.writeHead(404, { 'x-request-id': 'req_plain', 'content-type': 'text/plain' }).end('nope');
      },
    ]);
    servers.push(server);
    const error = await failure(clientFor(server.url).chat({ feature: 'chat', input: 'hi' }));
    expect(error).toMatchObject({ code: 'not_found', status: 404, requestId: 'req_plain' });
  });

  it('name a 503 without an envelope unavailable', async () => {
    const server = await startScriptedGateway([
      (_, response) => {
        response.writeHead(503, { 'x-request-id': 'req_down', 'content-type': 'text/plain' }).end('down');
      },
    ]);
    servers.push(server);
    const error = await failure(clientFor(server.url, { retry: { maxRetries: 0 } }).chat({ feature: 'chat', input: 'hi' }));
    expect(error).toMatchObject({ code: 'unavailable', status: 503, requestId: 'req_down' });
  });

  it('report a refused connection as network_error with status 0', async () => {
    const server = await startScriptedGateway([]);
    await server.close();
    const client = clientFor(server.url, { retry: { maxRetries: 0 } });
    const error = await failure(client.chat({ feature: 'chat', input: 'hi' }));
    expect(error).toMatchObject({ code: 'network_error', status: 0, requestId: undefined });
  });

  it('reject a 200 answer that lacks the faucet metadata as invalid_response', async () => {
    const server = await startScriptedGateway([
      (_, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"choices":[]}');
      },
    ]);
    servers.push(server);
    const error = await failure(clientFor(server.url).chat({ feature: 'chat', input: 'hi' }));
    expect(error.code).toBe('invalid_response');
  });

  it('are recognised by isInstance across duplicate copies of the SDK, and nothing else is', () => {
    const fromAnotherCopy = Object.assign(new Error('x'), { [Symbol.for('faucet.sdk.error')]: true, code: 'timeout' });
    expect(FaucetError.isInstance(fromAnotherCopy)).toBe(true);
    expect(FaucetError.isInstance(new Error('plain'))).toBe(false);
    expect(FaucetError.isInstance({ code: 'timeout' })).toBe(false);
    expect(FaucetError.isInstance(null)).toBe(false);
  });

  it('reject bad options before any request', () => {
    expect(() => clientFor('http://127.0.0.1:1', { publicAppId: '' })).toThrowError(expect.objectContaining({ code: 'invalid_request' }));
  });
});
