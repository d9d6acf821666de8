import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../../test/support/fake-upstream';
import { rawRequest } from '../../test/support/http-request';
import { freePort } from '../../test/support/listen';
import { sessionToken, startTestBridge, type TestBridge } from '../../test/support/start-test-bridge';
import { parseUpstreamUrl } from '../upstream/upstream-kind';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

async function bridgeWithUpstream(options: Parameters<typeof startFakeUpstream>[0] = {}, apiKey?: string) {
  const upstream = await startFakeUpstream(options);
  const bridge = await startTestBridge({ upstream: parseUpstreamUrl(upstream.url, 'ollama'), upstreamApiKey: apiKey });
  cleanup.push(upstream.close, () => bridge.close());
  return { upstream, bridge };
}

const secretPrompt = 'my secret prompt about the quarterly numbers';
const chat = (bridge: TestBridge, body: object, headers: Record<string, string> = {}) =>
  rawRequest(bridge.port, { method: 'POST', path: '/v1/chat/completions', body, headers });

describe('POST /v1/chat/completions', () => {
  it('proxies a chat and adds faucet metadata with the upstream token counts', async () => {
    const { bridge } = await bridgeWithUpstream();
    const answer = await chat(bridge, { model: 'llama3.2:3b', messages: [{ role: 'user', content: 'Hi' }] }, { 'x-request-id': 'req-abc' });
    expect(answer.status).toBe(200);
    const body = answer.json();
    expect(body.choices[0].message.content).toBe('Hello from the fake.');
    expect(body.faucet).toEqual({
      request_id: 'req-abc',
      route_mode: 'local',
      provider: 'ollama',
      model: 'llama3.2:3b',
      input_tokens: 11,
      output_tokens: 5,
      estimated: false,
    });
    expect(answer.headers['x-request-id']).toBe('req-abc');
  });

  it('estimates token counts and says so when the upstream reports no usage', async () => {
    const { bridge } = await bridgeWithUpstream({ reportUsage: false });
    const content = 'x'.repeat(40);
    const answer = await chat(bridge, { model: 'llama3.2:3b', messages: [{ role: 'user', content }] });
    expect(answer.status).toBe(200);
    // 40 chars / 4 + 4 per message + 2 per reply = 16; "Hello from the fake." is 20 chars = 5 tokens.
    expect(answer.json().faucet).toMatchObject({ input_tokens: 16, output_tokens: 5, estimated: true });
  });

  it('streams the upstream events through, asks for include_usage and ends with faucet.usage before [DONE]', async () => {
    const { upstream, bridge } = await bridgeWithUpstream();
    const answer = await chat(bridge, {
      model: 'llama3.2:3b',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_obfuscation: false },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toContain('text/event-stream');
    expect(upstream.requests.at(-1)!.body.stream_options).toEqual({ include_obfuscation: false, include_usage: true });
    const events = answer.text.trim().split('\n\n');
    expect(events.at(-1)).toBe('data: [DONE]');
    const usageEvent = JSON.parse(events.at(-2)!.slice('data: '.length));
    expect(usageEvent).toMatchObject({
      object: 'faucet.usage',
      choices: [],
      model: 'llama3.2:3b',
      faucet: { route_mode: 'local', provider: 'ollama', model: 'llama3.2:3b', input_tokens: 11, output_tokens: 5, estimated: false },
    });
    const deltas = events
      .slice(0, -2)
      .map((event) => JSON.parse(event.slice('data: '.length)))
      .flatMap((chunk) => chunk.choices.map((choice: any) => choice.delta.content ?? ''));
    expect(deltas.join('')).toBe('Hello from the fake.');
  });

  it('estimates a streamed answer when the upstream sends no usage chunk', async () => {
    const { bridge } = await bridgeWithUpstream({ reportUsage: false });
    const answer = await chat(bridge, { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(8) }], stream: true });
    const events = answer.text.trim().split('\n\n');
    expect(JSON.parse(events.at(-2)!.slice(6)).faucet).toMatchObject({ input_tokens: 8, output_tokens: 5, estimated: true });
  });

  it('ends a stream the upstream cut short with an error event in the envelope shape', async () => {
    const { bridge } = await bridgeWithUpstream({ breakStream: true });
    const answer = await chat(bridge, { model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    expect(answer.status).toBe(200);
    const events = answer.text.trim().split('\n\n');
    expect(events[0]).toContain('Hello ');
    const last = JSON.parse(events.at(-1)!.slice(6));
    expect(last.error).toMatchObject({ code: 'upstream_error', request_id: answer.headers['x-request-id'] });
  });

  it('answers 502 with a helpful message when the upstream is down', async () => {
    const port = await freePort();
    const bridge = await startTestBridge({ upstream: parseUpstreamUrl(`http://127.0.0.1:${port}`, 'ollama') });
    cleanup.push(() => bridge.close());
    const answer = await chat(bridge, { model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
    expect(answer.status).toBe(502);
    const { error } = answer.json();
    expect(error.code).toBe('upstream_error');
    expect(error.message).toContain('connection refused');
    expect(error.message).toContain('ollama serve');
    expect(error.request_id).toBe(answer.headers['x-request-id']);
  });

  it('answers 504 when the upstream sends no response headers in time', async () => {
    const upstream = await startFakeUpstream({ hang: true });
    const bridge = await startTestBridge({ upstream: parseUpstreamUrl(upstream.url), upstreamTimeoutMs: 100 });
    cleanup.push(upstream.close, () => bridge.close());
    const answer = await chat(bridge, { model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
    expect(answer.status).toBe(504);
    expect(answer.json().error.code).toBe('upstream_timeout');
  });

  it('does not cut a stream that outlasts the header timeout', async () => {
    const upstream = await startFakeUpstream({ pauseMidStreamMs: 300 });
    const bridge = await startTestBridge({ upstream: parseUpstreamUrl(upstream.url), upstreamTimeoutMs: 100 });
    cleanup.push(upstream.close, () => bridge.close());
    const answer = await chat(bridge, { model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    expect(answer.text).not.toContain('"error"');
    expect(answer.text.trim().endsWith('data: [DONE]')).toBe(true);
  });

  it("passes an upstream's model-not-found on as not_found with its message", async () => {
    const { bridge } = await bridgeWithUpstream();
    const answer = await chat(bridge, { model: 'missing-model', messages: [{ role: 'user', content: 'Hi' }] });
    expect(answer.status).toBe(404);
    expect(answer.json().error.message).toContain('model "missing-model" not found');
  });

  it("never forwards the caller's session token or Faucet-only fields; sends the configured upstream key", async () => {
    const { upstream, bridge } = await bridgeWithUpstream({}, 'sk-local-upstream');
    await chat(
      bridge,
      { model: 'm', messages: [{ role: 'user', content: 'Hi' }], feature: 'chat', route_mode: 'local' },
      { authorization: `Bearer ${sessionToken}` },
    );
    const seen = upstream.requests.at(-1)!;
    expect(seen.headers.authorization).toBe('Bearer sk-local-upstream');
    expect(seen.body).not.toHaveProperty('feature');
    expect(seen.body).not.toHaveProperty('route_mode');
  });

  it('keeps prompt and completion text out of the log', async () => {
    const { bridge } = await bridgeWithUpstream();
    await chat(bridge, { model: 'm', messages: [{ role: 'user', content: secretPrompt }] });
    await chat(bridge, { model: 'm', messages: [{ role: 'user', content: secretPrompt }], stream: true });
    expect(bridge.logs.filter((line) => line.includes('"route":"/v1/chat/completions"'))).toHaveLength(2);
    expect(bridge.logs.join('\n')).not.toContain('quarterly');
    expect(bridge.logs.join('\n')).not.toContain('Hello from the fake');
  });

  it('refuses a body without model or messages, non-JSON and non-JSON content types', async () => {
    const { upstream, bridge } = await bridgeWithUpstream();
    expect((await chat(bridge, { messages: [] })).json().error.code).toBe('invalid_request');
    const broken = await rawRequest(bridge.port, {
      method: 'POST',
      path: '/v1/chat/completions',
      body: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(broken.status).toBe(400);
    const plain = await rawRequest(bridge.port, {
      method: 'POST',
      path: '/v1/chat/completions',
      body: '{}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(plain.status).toBe(400);
    expect(upstream.requests.filter((request) => request.path === '/v1/chat/completions')).toHaveLength(0);
  });

  it('refuses a body over the size limit with 413', async () => {
    const upstream = await startFakeUpstream();
    const bridge = await startTestBridge({
      upstream: parseUpstreamUrl(upstream.url),
      limits: { chatBodyBytes: 1024, reportBodyBytes: 1024 },
    });
    cleanup.push(upstream.close, () => bridge.close());
    const body = { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(2000) }] };
    const declared = await chat(bridge, body);
    expect(declared.status).toBe(413);
    expect(declared.json().error.code).toBe('payload_too_large');
    // Chunked: no Content-Length to check up front, so the limit applies while reading.
    const chunked = await rawRequest(bridge.port, { method: 'POST', path: '/v1/chat/completions', body, chunked: true });
    expect(chunked.status).toBe(413);
    expect(upstream.requests).toHaveLength(0);
  });
});
