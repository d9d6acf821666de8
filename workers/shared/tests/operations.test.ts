import parsePrometheus from 'parse-prometheus-text-format';
import { beforeAll, describe, expect, it } from 'vitest';
import { createServiceApp } from '../app.ts';
import { workerVersions } from '../release.ts';
import { FaucetError } from '../wire/errors.ts';
import { adminToken, api, call, createSession, createTestEnv, gateway, sql, type TestEnv } from '../../test/harness.ts';

/** A service app like the real ones, with routes that fail on purpose. */
function probeApp(service: 'api' | 'gateway' = 'api') {
  const app = createServiceApp({
    service,
    title: 'probe',
    version: '0',
    rateLimit: {
      maxRequestsSetting: 'API_RATE_LIMIT_MAX_REQUESTS',
      windowMsSetting: 'API_RATE_LIMIT_WINDOW_MS',
      defaultMaxRequests: 1200,
      defaultWindowMs: 60_000,
    },
    defaultMaxBodyBytes: 1024,
  });
  app.get('/boom', () => {
    throw new Error('database password is hunter2 at /srv/secret.ts:12');
  });
  app.get('/coded', () => {
    throw new FaucetError('invalid_state', 'Payout is not approved');
  });
  app.post('/echo', async (c) => c.json(await c.req.json()));
  app.get('/items/:id', (c) => c.json({ id: c.req.param('id') }));
  return app;
}

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

type Envelope = { error: { code: string; message: string; request_id: string } };

describe('request IDs', () => {
  it('keeps a safe caller-supplied x-request-id', async () => {
    const response = await call(probeApp(), testEnv, '/nowhere', { headers: { 'x-request-id': 'client-abc_123:9' } });
    expect(response.headers.get('x-request-id')).toBe('client-abc_123:9');
    expect(((await response.json()) as Envelope).error.request_id).toBe('client-abc_123:9');
  });

  it.each(['has space', 'x'.repeat(129), '<script>', ''])('replaces an unsafe one (%j) with a generated ID', async (supplied) => {
    const response = await call(probeApp(), testEnv, '/health', { headers: { 'x-request-id': supplied } });
    expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it('generates one for every response, success included', async () => {
    const first = await call(probeApp(), testEnv, '/health');
    const second = await call(probeApp(), testEnv, '/health');
    expect(first.headers.get('x-request-id')).toMatch(/^req_/);
    expect(first.headers.get('x-request-id')).not.toBe(second.headers.get('x-request-id'));
  });
});

describe('error envelope', () => {
  const expectEnvelope = async (response: Response, status: number, code: string) => {
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toContain('application/json');
    const body = (await response.json()) as Envelope;
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error.code).toBe(code);
    expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
    return body;
  };

  it('404 for an unknown route', async () => {
    await expectEnvelope(await call(probeApp(), testEnv, '/v1/nothing'), 404, 'not_found');
  });

  it('400 for malformed JSON', async () => {
    const response = await call(api(), testEnv, '/v1/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"public_app_id": ',
    });
    await expectEnvelope(response, 400, 'invalid_request');
  });

  it('413 for an oversized body', async () => {
    const response = await call(probeApp(), testEnv, '/echo', { json: { text: 'x'.repeat(4096) } });
    await expectEnvelope(response, 413, 'payload_too_large');
  });

  it('413 on the real API for a body over its limit', async () => {
    const response = await call(api(), testEnv, '/v1/sessions', {
      json: { public_app_id: 'app_demo_local', external_user_id: 'x'.repeat(300 * 1024) },
    });
    await expectEnvelope(response, 413, 'payload_too_large');
  });

  it('500 without internals for an unexpected exception', async () => {
    const body = await expectEnvelope(await call(probeApp(), testEnv, '/boom'), 500, 'internal_error');
    expect(body.error.message).toBe('Internal error');
    expect(JSON.stringify(body)).not.toMatch(/hunter2|secret\.ts|at /);
  });

  it('maps a coded error to its status', async () => {
    await expectEnvelope(await call(probeApp(), testEnv, '/coded'), 409, 'invalid_state');
  });

  it('401 for a wrong or missing admin token', async () => {
    await expectEnvelope(await call(api(), testEnv, '/v1/admin/reconciliation/ledger'), 401, 'unauthorized');
    await expectEnvelope(await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: `${adminToken}x` }), 401, 'unauthorized');
  });
});

describe('rate limiting', () => {
  it('answers 429 rate_limited with retry-after past the limit, counted per IP and route', async () => {
    const limitedEnv = { ...testEnv, API_RATE_LIMIT_MAX_REQUESTS: '3', API_RATE_LIMIT_WINDOW_MS: '60000' };
    const app = probeApp();
    const from = (ip: string, path: string) => call(app, limitedEnv, path, { headers: { 'cf-connecting-ip': ip } });
    const ip = `10.0.${Math.floor(Math.random() * 250)}.1`;
    for (let index = 0; index < 3; index++) expect((await from(ip, '/items/a')).status).toBe(200);
    const limited = await from(ip, '/items/b'); // same route pattern /items/:id
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await limited.json()) as Envelope).error.code).toBe('rate_limited');
    // Another route and another IP have their own counters.
    expect((await from(ip, '/nowhere')).status).toBe(404);
    expect((await from(`${ip}0`, '/items/a')).status).toBe(200);
  });

  it('starts a new count when the window ends', async () => {
    const limitedEnv = { ...testEnv, API_RATE_LIMIT_MAX_REQUESTS: '1', API_RATE_LIMIT_WINDOW_MS: '1000' };
    const app = probeApp();
    const ip = `10.1.${Math.floor(Math.random() * 250)}.2`;
    const hit = () => call(app, limitedEnv, '/items/x', { headers: { 'cf-connecting-ip': ip } });
    // Align to the start of a window so both hits fall in it.
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
    expect((await hit()).status).toBe(200);
    expect((await hit()).status).toBe(429);
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
    expect((await hit()).status).toBe(200);
  });

  it('is disabled by 0', async () => {
    const openEnv = { ...testEnv, API_RATE_LIMIT_MAX_REQUESTS: '0' };
    const app = probeApp();
    for (let index = 0; index < 20; index++) {
      expect((await call(app, openEnv, '/items/z', { headers: { 'cf-connecting-ip': '10.2.0.1' } })).status).toBe(200);
    }
  });

  it('fails open when the limiter is unreachable', async () => {
    const broken = {
      ...testEnv,
      API_RATE_LIMIT_MAX_REQUESTS: '1',
      RATE_LIMITER: {
        idFromName: () => ({}),
        get: () => ({ hit: () => Promise.reject(new Error('durable object down')) }),
      } as unknown as TestEnv['RATE_LIMITER'],
    };
    const app = probeApp();
    for (let index = 0; index < 3; index++) expect((await call(app, broken, '/items/q')).status).toBe(200);
  });
});

describe('metrics', () => {
  it('exposes Prometheus text counting requests by route pattern, off the critical path', async () => {
    const app = probeApp('gateway');
    for (const id of ['1', '2', '3']) await call(app, testEnv, `/items/${id}`);
    await call(app, testEnv, '/nowhere');
    const response = await call(gateway(), testEnv, '/metrics');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    const families = parsePrometheus(text) as Array<{
      name: string;
      type: string;
      metrics: Array<{ labels: Record<string, string>; value: string }>;
    }>;
    const names = families.map((family) => family.name);
    expect(names).toEqual(
      expect.arrayContaining(['service_http_requests_total', 'service_http_request_duration_ms_sum', 'service_rate_limited_total']),
    );
    const requests = families.find((family) => family.name === 'service_http_requests_total')!;
    const items = requests.metrics.find(
      (metric) => metric.labels.route === '/items/:id' && metric.labels.service === 'gateway' && metric.labels.status === '200',
    );
    expect(items && Number(items.value)).toBe(3);
    expect(requests.metrics.some((metric) => metric.labels.route === '/items/1')).toBe(false);
    expect(requests.metrics.some((metric) => metric.labels.route === 'unmatched')).toBe(true);
    // Only this service's series.
    expect(requests.metrics.every((metric) => metric.labels.service === 'gateway')).toBe(true);
  });

  it('counts rate-limited requests', async () => {
    const limitedEnv = { ...testEnv, API_RATE_LIMIT_MAX_REQUESTS: '1' };
    const app = probeApp();
    const ip = `10.3.${Math.floor(Math.random() * 250)}.3`;
    await call(app, limitedEnv, '/items/r', { headers: { 'cf-connecting-ip': ip } });
    await call(app, limitedEnv, '/items/r', { headers: { 'cf-connecting-ip': ip } });
    const text = await (await call(api(), testEnv, '/metrics')).text();
    expect(text).toMatch(/service_rate_limited_total\{service="api",method="GET",route="\/items\/:id"\} [1-9]/);
  });
});

describe("CORS: an app's web origins only", () => {
  const listed = 'https://cors-listed.example';
  const unlisted = 'https://cors-unlisted.example';
  beforeAll(async () => {
    await sql(testEnv, `update apps set allowed_origins = $1::jsonb where public_app_id = 'app_demo_local'`, [JSON.stringify([listed])]);
  });
  const preflight = (origin: string) =>
    call(gateway(), testEnv, '/v1/chat/completions', {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });

  it('answers a preflight for an origin some app lists, and not for any other', async () => {
    const allowed = await preflight(listed);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(listed);
    expect(allowed.headers.get('access-control-allow-headers')).toContain('authorization');
    const refused = await preflight(unlisted);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it("allows the session's app origins on the gateway and /v1/user/*, never *, and exposes the request ID", async () => {
    const session = await createSession(testEnv);
    for (const [app, path, init] of [
      [gateway(), '/v1/chat/completions', { json: { model: 'mock:echo', messages: [{ role: 'user', content: 'hi' }] } }],
      [api(), '/v1/user/wallet', {}],
    ] as const) {
      const allowed = await call(app, testEnv, path, { ...init, token: session.token, headers: { origin: listed } });
      expect(allowed.headers.get('access-control-allow-origin')).toBe(listed);
      expect(allowed.headers.get('access-control-expose-headers')).toContain('x-request-id');
      const refused = await call(app, testEnv, path, { ...init, token: session.token, headers: { origin: unlisted } });
      expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it("lets the app's page read the 401 of its expired session (so the SDK can renew it)", async () => {
    const session = await createSession(testEnv);
    await sql(testEnv, `update virtual_sessions set expires_at = now() - interval '1 second' where id = $1`, [session.sessionId]);
    const response = await call(api(), testEnv, '/v1/user/wallet', { token: session.token, headers: { origin: listed } });
    expect(response.status).toBe(401);
    expect(response.headers.get('access-control-allow-origin')).toBe(listed);
  });

  it('allows no origin on routes that concern no app', async () => {
    const response = await call(api(), testEnv, '/health', { headers: { origin: listed } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('health, readiness, OpenAPI', () => {
  it('GET /health answers ok, naming the worker and its version', async () => {
    expect(await (await call(api(), testEnv, '/health')).json()).toEqual({ status: 'ok', service: 'api', version: '0.7.0' });
    expect(await (await call(gateway(), testEnv, '/health')).json()).toEqual({ status: 'ok', service: 'gateway', version: '0.7.0' });
  });

  it('GET /ready names the answering worker and its version on the release line, as its OpenAPI document does', async () => {
    for (const [app, service] of [
      [api(), 'api'],
      [gateway(), 'gateway'],
    ] as const) {
      const ready = await call(app, testEnv, '/ready');
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', service, version: workerVersions[service] });
      const document = (await (await call(app, testEnv, '/openapi.json')).json()) as {
        info: { version: string };
        components: { schemas: Record<string, { required?: string[] }> };
        paths: Record<string, unknown>;
      };
      expect(document.info.version).toBe(workerVersions[service]);
      expect(document.paths).toHaveProperty(['/ready', 'get']);
      expect(document.components.schemas.Readiness!.required).toEqual(expect.arrayContaining(['service', 'version']));
    }
    expect(workerVersions).toMatchObject({ api: '0.7.0', gateway: '0.7.0' });
  });

  it('GET /ready answers 503 not_ready, still naming its version, when no database is configured', async () => {
    const response = await call(gateway(), { ...testEnv, DATABASE_URL: undefined }, '/ready');
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: 'not_ready', service: 'gateway', version: '0.7.0' });
  });

  it('GET /ready reports configuration without secrets', async () => {
    const response = await call(gateway(), testEnv, '/ready');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(JSON.parse(text).checks.database_configured).toBe(true);
    for (const secret of [testEnv.ADMIN_TOKEN, testEnv.SESSION_HASH_SECRET, testEnv.DATABASE_URL]) {
      expect(text).not.toContain(secret);
    }
  });

  it('serves an OpenAPI 3.1 document for the API and the gateway', async () => {
    for (const app of [api(), gateway()]) {
      const document = (await (await call(app, testEnv, '/openapi.json')).json()) as { openapi: string; paths: object };
      expect(document.openapi).toBe('3.1.0');
    }
    const apiDocument = (await (await call(api(), testEnv, '/openapi.json')).json()) as { paths: Record<string, unknown> };
    expect(apiDocument.paths['/v1/sessions']).toBeDefined();
    const gatewayDocument = (await (await call(gateway(), testEnv, '/openapi.json')).json()) as {
      paths: Record<string, { post?: { requestBody?: { content: Record<string, { schema: { properties?: object } }> } } }>;
    };
    expect(Object.keys(gatewayDocument.paths)).toEqual(expect.arrayContaining(['/v1/chat/completions', '/v1/models']));
    const chatBody = gatewayDocument.paths['/v1/chat/completions']!.post!.requestBody!.content['application/json']!.schema;
    expect(chatBody.properties).toHaveProperty('feature');
  });
});
