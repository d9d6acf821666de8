import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChatStreamPart } from '../src/index.ts';
import { clientFor } from './client-for.ts';
import { startFakeBridge, type FakeBridge } from './fake-bridge.ts';
import { startFakeFaucet, type FakeFaucet } from './fake-faucet.ts';

let faucet: FakeFaucet | undefined;
let bridge: FakeBridge | undefined;
afterEach(async () => {
  await faucet?.close();
  await bridge?.stop();
  faucet = bridge = undefined;
});

async function setUp(options: Parameters<typeof startFakeBridge>[0] = {}) {
  faucet = await startFakeFaucet();
  bridge = await startFakeBridge(options);
  return clientFor(faucet.url, { bridgeUrl: bridge.url, retry: { baseDelayMs: 1 } });
}

const reportsReceived = (target: FakeBridge) => target.requests.filter((request) => request.path === '/usage/report');
const reportKeys = [
  'request_id',
  'public_app_id',
  'user_id_hash',
  'feature',
  'route_mode',
  'provider',
  'model',
  'input_tokens',
  'output_tokens',
  'estimated',
  'occurred_at',
];

describe('local route', () => {
  it('goes straight to the bridge, never to the gateway, and reports the usage the bridge accepted', async () => {
    const client = await setUp();
    const answer = await client.chat({ feature: 'chat', routeMode: 'local', model: 'llama3.2:1b', input: 'hi there' });
    expect(answer.choices[0]!.message.content).toBe('local echo: hi there');
    expect(faucet!.requestsTo('/v1/chat/completions')).toHaveLength(0);
    expect(answer.faucet).toMatchObject({
      route_mode: 'local',
      provider: 'ollama',
      model: 'llama3.2:1b',
      input_tokens: 11,
      output_tokens: 7,
      estimated: false,
      usage_report_status: 'accepted',
    });
    const [report] = reportsReceived(bridge!);
    expect(report!.headers.authorization).toBe('Bearer fvs_fakesession00000001');
    expect(JSON.parse(report!.body)).toEqual({
      request_id: answer.faucet.request_id,
      public_app_id: 'app_fake_demo',
      // The server's opaque user_ref from the session answer, never a hash of the raw user id.
      user_id_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      feature: 'chat',
      route_mode: 'local',
      provider: 'ollama',
      model: 'llama3.2:1b',
      input_tokens: 11,
      output_tokens: 7,
      estimated: false,
      occurred_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(client.local.pendingUsageReports()).toEqual([]);
    const userIdHash = JSON.parse(report!.body).user_id_hash as string;
    const sessionRequest = faucet!.requestsTo('/v1/sessions')[0]!.body;
    expect(userIdHash).toBe(createHash('sha256').update(`fake-server-secret:${sessionRequest}`).digest('hex'));
    expect(userIdHash).not.toBe(createHash('sha256').update('user-42@example.com').digest('hex'));
  });

  it("sends no report when the backend gave a bare session token (no user_ref to name the user): status 'rejected'", async () => {
    faucet = await startFakeFaucet();
    bridge = await startFakeBridge();
    const server = faucet;
    const session = async () => {
      const response = await fetch(`${server.url}/v1/sessions`, {
        method: 'POST',
        body: JSON.stringify({ public_app_id: server.publicAppId, external_user_id: 'u' }),
      });
      return ((await response.json()) as { session_token: string }).session_token;
    };
    const client = clientFor(faucet.url, { user: undefined, session, bridgeUrl: bridge.url });
    const answer = await client.chat({ feature: 'chat', routeMode: 'local', input: 'hi' });
    expect(answer.faucet.usage_report_status).toBe('rejected');
    expect(reportsReceived(bridge)).toEqual([]);
    expect(client.local.pendingUsageReports()).toEqual([]);
  });

  it('never sends the raw user ID to the bridge', async () => {
    const client = await setUp();
    await client.chat({ feature: 'chat', routeMode: 'local', input: 'x' });
    for (const request of bridge!.requests) expect(JSON.stringify(request)).not.toContain('user-42@example.com');
  });

  it('estimates token counts when the local server gives none, and says so', async () => {
    const client = await setUp({ reportTokenUsage: false });
    const answer = await client.chat({ feature: 'chat', routeMode: 'local', input: 'twelve chars' });
    // 12 characters ≈ 3 tokens, plus OpenAI's framing of one message (4) and of the reply (2): the bridge's estimate too.
    expect(answer.faucet).toMatchObject({ input_tokens: 9, estimated: true });
    expect(JSON.parse(reportsReceived(bridge!)[0]!.body)).toMatchObject({ input_tokens: 9, estimated: true });
  });

  it('streams local answers and ends with the metadata, usage counted from the stream', async () => {
    const client = await setUp();
    const parts: ChatStreamPart[] = [];
    for await (const part of client.chatStream({ feature: 'chat', routeMode: 'local', input: 'a b' })) parts.push(part);
    expect(parts.flatMap((part) => (part.type === 'delta' ? [part.delta] : [])).join('')).toBe('local echo: a b');
    expect(parts.at(-1)).toEqual({
      type: 'metadata',
      faucet: expect.objectContaining({ input_tokens: 11, output_tokens: 7, usage_report_status: 'accepted' }),
    });
  });

  it('reports the text produced before the user stopped a local stream, estimated and without content', async () => {
    const client = await setUp({ stallAfterFirstChunk: true });
    const controller = new AbortController();
    const received: string[] = [];
    const consume = async () => {
      for await (const part of client.chatStream({
        feature: 'chat',
        routeMode: 'local',
        input: 'PROMPT-stop-77 tell me more',
        signal: controller.signal,
      })) {
        if (part.type === 'delta') received.push(part.delta);
        controller.abort();
      }
    };
    await expect(consume()).rejects.toMatchObject({ code: 'aborted' });
    expect(received).toEqual(['local ']);
    await vi.waitFor(() => expect(reportsReceived(bridge!)).toHaveLength(1));
    const report = JSON.parse(reportsReceived(bridge!)[0]!.body);
    expect(report).toMatchObject({ route_mode: 'local', provider: 'ollama', estimated: true, output_tokens: 2, input_tokens: 7 + 6 });
    expect(reportsReceived(bridge!)[0]!.body).not.toContain('PROMPT-stop-77');
  });

  it('returns the answer and queues the report when the bridge cannot take it, then delivers it once the bridge is back', async () => {
    const client = await setUp({ reportsFailing: true });
    const answer = await client.chat({ feature: 'chat', routeMode: 'local', input: 'hello' });
    expect(answer.choices[0]!.message.content).toBe('local echo: hello');
    expect(answer.faucet.usage_report_status).toBe('queued');
    expect(client.local.pendingUsageReports().map((report) => report.request_id)).toEqual([answer.faucet.request_id]);

    await bridge!.stop();
    expect(await client.local.flushUsageReports()).toEqual({ sent: 0, dropped: 0, pending: 1 });

    bridge!.options.reportsFailing = false;
    await bridge!.start();
    const accepted = reportsReceived(bridge!).length;
    expect(await client.local.flushUsageReports()).toEqual({ sent: 1, dropped: 0, pending: 0 });
    expect(client.local.pendingUsageReports()).toEqual([]);
    const delivered = reportsReceived(bridge!).slice(accepted);
    expect(delivered.map((request) => JSON.parse(request.body).request_id)).toEqual([answer.faucet.request_id]);
  });

  it('drops a queued report the bridge refuses as invalid instead of retrying it forever', async () => {
    const client = await setUp({ reportsFailing: true });
    await client.chat({ feature: 'chat', routeMode: 'local', input: 'x' });
    bridge!.options.reportsFailing = false;
    bridge!.options.rejectReports = true;
    expect(await client.local.flushUsageReports()).toEqual({ sent: 0, dropped: 1, pending: 0 });
  });

  it('keeps prompt and answer text out of reports and out of the queue', async () => {
    const prompt = 'PROMPT-7f3a the secret plan is under the oak';
    const client = await setUp({ reportsFailing: true });
    const queued = await client.chat({
      feature: 'chat',
      routeMode: 'local',
      input: [
        { role: 'system', content: 'SYSTEM-91c be terse' },
        { role: 'user', content: prompt },
      ],
    });
    bridge!.options.reportsFailing = false;
    const accepted = await client.chat({ feature: 'chat', routeMode: 'local', input: prompt });
    const pendingText = JSON.stringify(client.local.pendingUsageReports());
    await client.local.flushUsageReports();
    const reportBodies = reportsReceived(bridge!).map((request) => request.body);
    expect(queued.faucet.usage_report_status).toBe('queued');
    expect(accepted.faucet.usage_report_status).toBe('accepted');
    expect(reportBodies.length).toBeGreaterThanOrEqual(3);
    for (const text of [pendingText, ...reportBodies]) {
      for (const secret of ['PROMPT-7f3a', 'secret plan', 'SYSTEM-91c', 'local echo']) expect(text).not.toContain(secret);
    }
    for (const body of reportBodies) expect(Object.keys(JSON.parse(body)).every((key) => reportKeys.includes(key))).toBe(true);
  });

  it('fails a local chat with bridge_unavailable when no bridge runs', async () => {
    const client = await setUp();
    await bridge!.stop();
    await expect(client.chat({ feature: 'chat', routeMode: 'local', input: 'x' })).rejects.toMatchObject({ code: 'bridge_unavailable' });
  });
});

describe('bridge discovery', () => {
  it('detects a running bridge and its version, and a missing one', async () => {
    const client = await setUp();
    expect(await client.local.detectBridge()).toEqual({ available: true, url: bridge!.url, version: '0.1.0-fake' });
    await bridge!.stop();
    expect(await client.local.detectBridge()).toEqual({ available: false, url: bridge!.url });
  });

  it('lists the local models', async () => {
    const client = await setUp();
    expect(await client.local.listModels()).toEqual([{ id: 'llama3.2:1b', provider: 'ollama' }]);
  });

  it('diagnoses a healthy setup, an unreachable model server and a missing bridge', async () => {
    const client = await setUp();
    expect(await client.local.diagnose()).toMatchObject({ available: true, problems: [] });
    bridge!.options.upstreamReachable = false;
    const unreachable = await client.local.diagnose();
    expect(unreachable.available).toBe(false);
    expect(unreachable.problems).toEqual([expect.stringContaining('connection refused')]);
    await bridge!.stop();
    const missing = await client.local.diagnose();
    expect(missing).toMatchObject({ available: false, problems: [expect.stringContaining('faucet-bridge start')] });
  });
});
