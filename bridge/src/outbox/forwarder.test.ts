import { readdir } from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startFakeControlApi, type FakeControlApi } from '../../test/support/fake-control-api';
import { rawRequest } from '../../test/support/http-request';
import { freePort } from '../../test/support/listen';
import { makeOutboxDirectory, sessionToken, startTestBridge, usageReport, type TestBridge } from '../../test/support/start-test-bridge';

/** Generous: these wait for an event, they do not measure speed. */
const eventually = { timeout: 15_000, interval: 10 };

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

async function report(bridge: TestBridge, overrides: Record<string, unknown> = {}) {
  const answer = await rawRequest(bridge.port, {
    method: 'POST',
    path: '/usage/report',
    body: usageReport(overrides),
    headers: { authorization: `Bearer ${sessionToken}` },
  });
  expect(answer.status).toBe(202);
}

async function startApi(port?: number): Promise<FakeControlApi> {
  const api = await startFakeControlApi(port);
  cleanup.push(api.close);
  return api;
}

async function bridgeFor(apiUrl: string | undefined, outboxDirectory?: string) {
  const bridge = await startTestBridge({ apiBaseUrl: apiUrl, outboxDirectory });
  cleanup.push(() => bridge.close());
  return bridge;
}

describe('usage report forwarding', () => {
  it('forwards a report to POST /v1/usage/local with the session token and empties the outbox', async () => {
    const api = await startApi();
    const bridge = await bridgeFor(api.url);
    await report(bridge);
    await vi.waitFor(() => expect(api.recorded).toHaveLength(1), eventually);
    expect(api.recorded[0]).toEqual({ body: usageReport(), authorization: `Bearer ${sessionToken}` });
    await bridge.services.forwarder.settled();
    expect(await bridge.services.outbox.pendingCount()).toBe(0);
  });

  it('retries 5xx answers with backoff until the report is accepted', async () => {
    const api = await startApi();
    api.nextStatuses.push(503, 500);
    const bridge = await bridgeFor(api.url);
    await report(bridge);
    await vi.waitFor(() => expect(api.recorded).toHaveLength(1), eventually);
    expect(api.attempts).toBe(3);
    expect(bridge.logs.some((line) => line.includes('"reason":"HTTP 503 internal_error"'))).toBe(true);
  });

  it('dead-letters a report the API refuses with a 4xx, with the reason and without the token, and stops trying', async () => {
    const api = await startApi();
    api.nextStatuses.push(401);
    const bridge = await bridgeFor(api.url);
    await report(bridge);
    await vi.waitFor(async () => expect(await bridge.services.outbox.listDead()).toHaveLength(1), eventually);
    await bridge.services.forwarder.settled();
    const [letter] = await bridge.services.outbox.listDead();
    expect(letter!.reason).toBe('control API refused the report: HTTP 401 unauthorized');
    expect(JSON.stringify(letter)).not.toContain(sessionToken);
    expect(await bridge.services.outbox.pendingCount()).toBe(0);
    expect(api.attempts).toBe(1);
  });

  it('keeps reports in the outbox across a restart and delivers each exactly once', async () => {
    const apiPort = await freePort();
    const outboxDirectory = await makeOutboxDirectory();

    // Control API down: the report waits on disk.
    const first = await bridgeFor(`http://127.0.0.1:${apiPort}`, outboxDirectory);
    await report(first, { request_id: 'brq_restart-1' });
    await report(first, { request_id: 'brq_restart-2' });
    await vi.waitFor(() => expect(first.logs.some((line) => line.includes('"reason":"network error"'))).toBe(true), eventually);
    await first.close();
    expect((await readdir(outboxDirectory)).filter((name) => name.endsWith('.json'))).toHaveLength(2);

    // API up, a new bridge process on the same outbox.
    const api = await startApi(apiPort);
    const second = await bridgeFor(api.url, outboxDirectory);
    await vi.waitFor(() => expect(api.recorded).toHaveLength(2), eventually);
    await second.services.forwarder.settled();
    expect(await second.services.outbox.pendingCount()).toBe(0);
    await second.close();

    // A third start finds nothing left to send.
    const third = await bridgeFor(api.url, outboxDirectory);
    await third.services.forwarder.settled();
    expect(api.recorded.map((entry) => entry.body.request_id).sort()).toEqual(['brq_restart-1', 'brq_restart-2']);
    expect(api.attempts).toBe(2);
  });

  it('holds reports while no control API is configured', async () => {
    const bridge = await bridgeFor(undefined);
    await report(bridge);
    await bridge.services.forwarder.settled();
    expect(await bridge.services.outbox.pendingCount()).toBe(1);
  });
});
