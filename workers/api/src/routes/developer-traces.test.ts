/**
 * An app's trace export as its developer sets it: the endpoint checked (https, public host), the
 * headers sealed and shown only masked, the delivery state readable; another developer can neither
 * read nor set nor remove it (404, as for an unknown app).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { openTraceHeaders } from '#shared/traces/trace-export.ts';
import { api, call, createTestEnv, type TestEnv, sql } from '../../../test/harness.ts';
import { createDeveloperApp, type TestApp } from '../../../test/identity-kit.ts';

let testEnv: TestEnv;
let owner: TestApp;
let rival: TestApp;
const secretValue = 'otlp-secret-value-0123456789';

beforeAll(async () => {
  testEnv = await createTestEnv({ ENVIRONMENT: 'production' });
  owner = await createDeveloperApp(testEnv, { policy: 'server' });
  rival = await createDeveloperApp(testEnv, { policy: 'server' });
});

const tracesOf = (app: TestApp) => `/v1/developer/apps/${app.publicAppId}/traces`;

async function put(app: TestApp, body: unknown, token = app.developerKey) {
  const response = await call(api(), testEnv, tracesOf(app), { method: 'PUT', json: body, token });
  return { status: response.status, body: (await response.json()) as Record<string, any>, text: '' };
}

describe('PUT/GET/DELETE /v1/developer/apps/{public_app_id}/traces', () => {
  it('stores the export with its headers sealed, and shows them only masked', async () => {
    const set = await put(owner, { endpoint: 'https://otlp.example.com/v1/traces', headers: { 'x-honeycomb-team': secretValue } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      public_app_id: owner.publicAppId,
      endpoint: 'https://otlp.example.com/v1/traces',
      headers: { 'x-honeycomb-team': '...6789' },
      enabled: true,
      delivery: { state: 'pending', last_success_at: null, last_error: null, consecutive_failures: 0 },
    });

    const read = await call(api(), testEnv, tracesOf(owner), { token: owner.developerKey });
    const text = await read.text();
    expect(read.status).toBe(200);
    expect(text).not.toContain(secretValue);
    expect(JSON.parse(text).headers).toEqual({ 'x-honeycomb-team': '...6789' });

    // At rest: sealed, never the value; opened only with the app's id.
    const [row] = await sql<{ headers_ciphertext: string; headers_iv: string; headers_key_version: number; app_id: string }>(
      testEnv,
      'select app_id, headers_ciphertext, headers_iv, headers_key_version from app_trace_exports where app_id = $1',
      [owner.appId],
    );
    expect(JSON.stringify(row)).not.toContain(secretValue);
    const sealed = { ciphertext: row!.headers_ciphertext, iv: row!.headers_iv, keyVersion: row!.headers_key_version };
    expect(await openTraceHeaders(testEnv, owner.appId, sealed)).toEqual({ 'x-honeycomb-team': secretValue });
    await expect(openTraceHeaders(testEnv, rival.appId, sealed)).rejects.toThrow();
  });

  it('refuses an endpoint that is not https or not on a public host, and writes nothing', async () => {
    for (const endpoint of [
      'http://otlp.example.com/v1/traces',
      'https://10.0.0.7/v1/traces',
      'https://127.0.0.1:4318/v1/traces',
      'https://169.254.169.254/latest',
      'https://collector.internal/v1/traces',
      'https://user:pass@otlp.example.com/v1/traces',
      'not a url',
    ]) {
      const refused = await put(rival, { endpoint });
      expect(refused.status, endpoint).toBe(400);
      expect(refused.body.error.code).toBe('invalid_request');
    }
    expect(await sql(testEnv, 'select 1 from app_trace_exports where app_id = $1', [rival.appId])).toEqual([]);
  });

  it('refuses headers Faucet sets itself, and malformed ones', async () => {
    expect((await put(rival, { endpoint: 'https://otlp.example.com/v1/traces', headers: { 'Content-Type': 'text/plain' } })).status).toBe(
      400,
    );
    expect((await put(rival, { endpoint: 'https://otlp.example.com/v1/traces', headers: { 'bad name': 'x' } })).status).toBe(400);
    expect((await put(rival, { endpoint: 'https://otlp.example.com/v1/traces', headers: { a: 'line\nbreak' } })).status).toBe(400);
    expect((await put(rival, { endpoint: 'https://otlp.example.com/v1/traces', extra: true })).status).toBe(400);
  });

  it("is 404 for another developer's app: not read, not set, not removed", async () => {
    const read = await call(api(), testEnv, tracesOf(owner), { token: rival.developerKey });
    expect(read.status).toBe(404);
    expect(await read.text()).not.toContain('otlp.example.com');
    const set = await put(owner, { endpoint: 'https://attacker.example.net/v1/traces' }, rival.developerKey);
    expect(set.status).toBe(404);
    const removed = await call(api(), testEnv, tracesOf(owner), { method: 'DELETE', token: rival.developerKey });
    expect(removed.status).toBe(404);
    const [row] = await sql<{ endpoint: string }>(testEnv, 'select endpoint from app_trace_exports where app_id = $1', [owner.appId]);
    expect(row!.endpoint).toBe('https://otlp.example.com/v1/traces');
    expect((await call(api(), testEnv, tracesOf(owner))).status).toBe(401);
  });

  it('is removed by its developer; then GET is 404', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'server' });
    expect((await put(app, { endpoint: 'https://otlp.example.com/v1/traces' })).status).toBe(200);
    const removed = await call(api(), testEnv, tracesOf(app), { method: 'DELETE', token: app.developerKey });
    expect(removed.status).toBe(200);
    expect(await removed.json()).toEqual({ public_app_id: app.publicAppId, deleted: true });
    expect((await call(api(), testEnv, tracesOf(app), { token: app.developerKey })).status).toBe(404);
  });

  it('is described in the OpenAPI document', async () => {
    const document = (await (await call(api(), testEnv, '/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(document.paths['/v1/developer/apps/{public_app_id}/traces'] ?? {}).sort()).toEqual(['delete', 'get', 'put']);
  });
});
