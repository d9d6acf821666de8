import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it, vi } from 'vitest';
import type {} from '../../tests/setup/node-stack';
import { rawRequest } from './support/http-request';
import { freePort } from './support/listen';
import { makeOutboxDirectory, startTestBridge, usageReport } from './support/start-test-bridge';

const eventually = { timeout: 30_000, interval: 25 };

/** Against the real local stack (control API on embedded PostgreSQL) started by the node project's global setup. */
describe('usage reports reach the ledger of the real control API', () => {
  it('a report queued while the API was down arrives after a bridge restart, once, rated at zero upstream cost', async () => {
    const stack = inject('stack');
    const externalUserId = `bridge-e2e-${randomUUID()}`;
    const session = await fetch(`${stack.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
      body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: externalUserId }),
    });
    expect(session.status).toBe(201);
    const { session_token: token, user_ref: userRef } = (await session.json()) as { session_token: string; user_ref: string };
    const requestId = `loc_${randomUUID()}`;
    const report = usageReport({
      request_id: requestId,
      public_app_id: stack.publicAppId,
      user_id_hash: userRef,
      feature: stack.featureKey,
      estimated: true,
      occurred_at: new Date().toISOString(),
    });
    const send = (port: number) =>
      rawRequest(port, { method: 'POST', path: '/usage/report', body: report, headers: { authorization: `Bearer ${token}` } });

    const outboxDirectory = await makeOutboxDirectory();
    const offline = await startTestBridge({ apiBaseUrl: `http://127.0.0.1:${await freePort()}`, outboxDirectory });
    expect((await send(offline.port)).status).toBe(202);
    await vi.waitFor(() => expect(offline.logs.some((line) => line.includes('will retry'))).toBe(true), eventually);
    await offline.close();

    const online = await startTestBridge({ apiBaseUrl: stack.apiUrl, outboxDirectory });
    try {
      await vi.waitFor(async () => expect(await online.services.outbox.pendingCount()).toBe(0), eventually);
      // The SDK resending the same report is harmless: the API is idempotent per request_id.
      expect((await send(online.port)).status).toBe(202);
      await vi.waitFor(async () => expect(await online.services.outbox.pendingCount()).toBe(0), eventually);
      // Its log line may follow the outbox's delete by a moment.
      await vi.waitFor(
        () => expect(online.logs.filter((line) => line.includes('"msg":"usage report forwarded"'))).toHaveLength(2),
        eventually,
      );
      expect(online.logs.some((line) => line.includes('"recorded":false'))).toBe(true);
      expect(await online.services.outbox.listDead()).toEqual([]);
    } finally {
      await online.close();
    }

    const usage = await fetch(`${stack.apiUrl}/v1/user/usage?limit=10`, { headers: { authorization: `Bearer ${token}` } });
    const { data } = (await usage.json()) as { data: Array<Record<string, unknown>> };
    const rows = data.filter((row) => row.request_id === requestId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ route_mode: 'local', input_tokens: 11, output_tokens: 5, estimated: true, charged_usd: '0.00000000' });
  });
});
