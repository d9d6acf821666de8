import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type {} from '../../../tests/setup/node-stack.ts';
import { startFakeUpstream, type FakeUpstream } from '../../../bridge/test/support/fake-upstream.ts';
import { startTestBridge, type TestBridge } from '../../../bridge/test/support/start-test-bridge.ts';
import { createFaucet, type ChatStreamPart, type FaucetOptions } from '../../src/index.ts';
import { backendSession } from '../real-stack.ts';

/** SDK → the real bridge (in process, a fake Ollama behind it) → the real control API of the global stack. */
const stack = inject('stack');
const eventually = { timeout: 30_000, interval: 50 };

let upstream: FakeUpstream;
let bridge: TestBridge | undefined;

const startBridge = async (port = 0, outboxDirectory?: string) =>
  startTestBridge({
    port,
    upstream: { url: upstream.url, kind: 'ollama' },
    apiBaseUrl: stack.apiUrl,
    ...(outboxDirectory ? { outboxDirectory } : {}),
  });

beforeAll(async () => {
  upstream = await startFakeUpstream();
  bridge = await startBridge();
});
afterAll(async () => {
  await bridge?.close(0);
  await upstream?.close();
});

function client(options: Partial<FaucetOptions> = {}) {
  return createFaucet({
    publicAppId: stack.publicAppId,
    session: backendSession(stack, `sdk-local-${randomUUID()}`),
    baseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    bridgeUrl: bridge!.url,
    ...options,
  });
}

/** Every file under a folder, as text. */
function filesUnder(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [readFileSync(path, 'utf8')];
  });
}

describe('local route through the real bridge', () => {
  it('answers from the local model, never calls the gateway, and the report lands in the ledger at zero cost', async () => {
    const called: string[] = [];
    const faucet = client({
      fetch: (input, init) => {
        called.push(String(input));
        return fetch(input, init);
      },
    });
    const answer = await faucet.chat({ feature: stack.featureKey, routeMode: 'local', model: 'llama3.2:3b', input: 'Hi local model' });
    expect(answer.choices[0]!.message.content).toBe('Hello from the fake.');
    expect(answer.faucet).toMatchObject({
      route_mode: 'local',
      provider: 'ollama',
      model: 'llama3.2:3b',
      input_tokens: 11,
      output_tokens: 5,
      estimated: false,
      usage_report_status: 'accepted',
    });
    expect(called.some((url) => url.startsWith(stack.gatewayUrl))).toBe(false);
    await vi.waitFor(async () => {
      const usage = await faucet.listUsage({ limit: 10 });
      expect(usage.find((record) => record.request_id === answer.faucet.request_id)).toMatchObject({
        route_mode: 'local',
        charged_usd: '0.00000000',
        input_tokens: 11,
      });
    }, eventually);
  });

  it('queues the report while the bridge is down, keeps it through a failed flush, and delivers it once the bridge is back', async () => {
    const prompt = 'PROMPT-e2e-4b1d: the launch code is 0000';
    const port = bridge!.port;
    const outboxDirectory = bridge!.outboxDirectory;
    const sentReports: string[] = [];
    const faucet = client({
      fetch: async (input, init) => {
        const url = String(input);
        if (url.endsWith('/usage/report')) sentReports.push(String(init?.body));
        const response = await fetch(input, init);
        if (!url.endsWith('/v1/chat/completions')) return response;
        // The bridge goes away right after answering, before the SDK can hand it the report.
        const body = await response.arrayBuffer();
        await bridge!.close(0);
        bridge = undefined;
        return new Response(body, { status: response.status, headers: response.headers });
      },
    });

    const answer = await faucet.chat({ feature: stack.featureKey, routeMode: 'local', model: 'llama3.2:3b', input: prompt });
    expect(answer.choices[0]!.message.content).toBe('Hello from the fake.');
    expect(answer.faucet.usage_report_status).toBe('queued');
    expect(faucet.local.pendingUsageReports().map((report) => report.request_id)).toEqual([answer.faucet.request_id]);
    expect(await faucet.local.detectBridge()).toMatchObject({ available: false });
    expect(await faucet.local.flushUsageReports()).toEqual({ sent: 0, dropped: 0, pending: 1 });

    bridge = await startBridge(port, outboxDirectory);
    expect(await faucet.local.flushUsageReports()).toEqual({ sent: 1, dropped: 0, pending: 0 });
    await vi.waitFor(async () => {
      const usage = await faucet.listUsage({ limit: 10 });
      expect(usage.filter((record) => record.request_id === answer.faucet.request_id)).toHaveLength(1);
    }, eventually);

    // No prompt text in anything that carried the report: the SDK's queue, the requests, the bridge's outbox, the ledger.
    const secret = 'PROMPT-e2e-4b1d';
    expect(sentReports.length).toBeGreaterThanOrEqual(1);
    for (const text of [
      JSON.stringify(faucet.local.pendingUsageReports()),
      ...sentReports,
      ...filesUnder(outboxDirectory),
      JSON.stringify(await faucet.listUsage()),
    ]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('Hello from the fake');
    }
  });

  it('streams a local answer through the bridge and ends with the metadata of the accepted report', async () => {
    const parts: ChatStreamPart[] = [];
    for await (const part of client().chatStream({
      feature: stack.featureKey,
      routeMode: 'local',
      model: 'ollama:llama3.2:3b',
      input: 'stream it',
    }))
      parts.push(part);
    expect(parts.flatMap((part) => (part.type === 'delta' ? [part.delta] : [])).join('')).toBe('Hello from the fake.');
    expect(parts.at(-1)).toEqual({
      type: 'metadata',
      faucet: expect.objectContaining({
        route_mode: 'local',
        provider: 'ollama',
        model: 'llama3.2:3b',
        input_tokens: 11,
        output_tokens: 5,
        usage_report_status: 'accepted',
      }),
    });
  });

  it('reports a missing bridge as bridge_unavailable, and diagnose says how to start it', async () => {
    const faucet = client({ bridgeUrl: 'http://127.0.0.1:9' });
    await expect(faucet.chat({ feature: stack.featureKey, routeMode: 'local', input: 'x' })).rejects.toMatchObject({
      code: 'bridge_unavailable',
    });
    expect(await faucet.local.diagnose()).toMatchObject({ available: false, problems: [expect.stringContaining('faucet-bridge start')] });
  });

  it('lists the local models and diagnoses a healthy bridge', async () => {
    const faucet = client();
    expect((await faucet.local.listModels()).map((model) => model.id)).toContain('llama3.2:3b');
    expect(await faucet.local.diagnose()).toMatchObject({ available: true, problems: [] });
  });
});
