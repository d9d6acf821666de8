/**
 * Routes that concern no app allow no origin (docs/identity.md, "Browser origins and CORS"): a page
 * on an origin some app lists, holding that app's session token, gets no CORS grant — neither on the
 * preflight nor on the actual request — from health, readiness, metrics, OpenAPI, developer or admin
 * routes of the API and the gateway. The app's own routes still grant it (the control).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, createTestEnv, gateway, type TestEnv } from '../../test/harness.ts';
import { askForSession, createDeveloperApp } from '../../test/identity-kit.ts';

const listed = `https://cors-${crypto.randomUUID().slice(0, 8)}.example`;

let testEnv: TestEnv;
let sessionToken: string;
beforeAll(async () => {
  testEnv = await createTestEnv();
  const app = await createDeveloperApp(testEnv, { policy: 'server', origins: [listed] });
  const response = await askForSession(
    testEnv,
    { public_app_id: app.publicAppId, external_user_id: 'page-user' },
    { token: app.developerKey },
  );
  sessionToken = ((await response.json()) as { session_token: string }).session_token;
});

type Worker = 'api' | 'gateway';
const workers = { api, gateway };

const noApp: Array<[Worker, string]> = [
  ['api', '/health'],
  ['api', '/ready'],
  ['api', '/metrics'],
  ['api', '/openapi.json'],
  ['api', '/v1/developer/apps'],
  ['api', '/v1/admin/developers'],
  ['gateway', '/health'],
  ['gateway', '/ready'],
  ['gateway', '/openapi.json'],
];

const preflight = (worker: Worker, path: string, method: string) =>
  call(workers[worker](), testEnv, path, {
    method: 'OPTIONS',
    headers: { origin: listed, 'access-control-request-method': method, 'access-control-request-headers': 'authorization' },
  });

describe('a listed origin with its session token, on routes that concern no app', () => {
  it.each(noApp)('%s %s: the actual request gets no allow-origin', async (worker, path) => {
    const response = await call(workers[worker](), testEnv, path, { token: sessionToken, headers: { origin: listed } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('access-control-expose-headers')).toBeNull();
  });

  it.each(noApp)('%s %s: the preflight gets no allow-origin', async (worker, path) => {
    const response = await preflight(worker, path, 'GET');
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('access-control-allow-methods')).toBeNull();
  });
});

describe("the same page on its app's routes (the control)", () => {
  it.each<[Worker, string, string]>([
    ['api', '/v1/user/wallet', 'GET'],
    ['api', '/v1/sessions', 'POST'],
    ['gateway', '/v1/chat/completions', 'POST'],
  ])('%s %s: the preflight is granted', async (worker, path, method) => {
    expect((await preflight(worker, path, method)).headers.get('access-control-allow-origin')).toBe(listed);
  });

  it.each<[Worker, string, { json?: unknown }]>([
    ['api', '/v1/user/wallet', {}],
    ['gateway', '/v1/chat/completions', { json: {} }],
  ])('%s %s: the actual request with the session token is granted', async (worker, path, init) => {
    const response = await call(workers[worker](), testEnv, path, { ...init, token: sessionToken, headers: { origin: listed } });
    expect(response.headers.get('access-control-allow-origin')).toBe(listed);
  });
});
