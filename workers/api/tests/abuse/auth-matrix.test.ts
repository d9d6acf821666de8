/**
 * The auth matrix: every non-public route of the API and the gateway, called with no token, a wrong
 * token, a token of the wrong kind (another kind of tenant) and an expired session, is refused with
 * 401 and the envelope, and changes nothing in the database. Resources of one tenant are invisible to
 * another (404, never 403, so ids cannot be probed) and stay untouched.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';
import { allEndpoints, appOf, buildWorld, databaseFingerprint, fillPath, validBody, type Endpoint, type World } from './abuse-kit.ts';

let testEnv: TestEnv;
let world: World;
beforeAll(async () => {
  testEnv = await createTestEnv();
  world = await buildWorld(testEnv);
});

const protectedEndpoints = allEndpoints().filter((endpoint) => endpoint.caller !== 'public' && endpoint.caller !== 'stripe');

function pathFor(endpoint: Endpoint): string {
  return fillPath(endpoint.path, (name) => {
    if (endpoint.path.startsWith('/v1/user/provider-keys')) return world.a.userKeyId;
    if (endpoint.path.startsWith('/v1/developer/provider-keys')) return world.developerKeyIdA;
    if (name === 'wallet_id' || endpoint.path.startsWith('/v1/admin/wallets')) return world.a.walletId;
    return crypto.randomUUID();
  });
}

/** Credentials that must not open `endpoint`. */
function refusedCredentials(endpoint: Endpoint): Array<[string, string | undefined]> {
  const cases: Array<[string, string | undefined]> = [
    ['no token', undefined],
    ['an empty bearer', ''],
    ['a garbage token', 'garbage'],
    ['an unknown session token', `fvs_${'Q'.repeat(43)}`],
    ['an unknown developer key', `fdk_${'Q'.repeat(40)}`],
    ['an admin-looking token', 'test-admin-token-0123456789abcdeX'],
  ];
  if (endpoint.caller !== 'session') cases.push(["an end user's session token", world.a.sessionToken]);
  if (endpoint.caller === 'session') cases.push(['an expired session token', world.expiredSessionToken]);
  if (endpoint.caller !== 'developer') cases.push(["a developer's key", world.developerKeyA]);
  if (endpoint.caller !== 'admin') cases.push(['the admin token', world.adminToken]);
  return cases;
}

async function send(endpoint: Endpoint, token: string | undefined) {
  const headers = new Headers();
  if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
  const init: { method: string; headers: Headers; body?: string } = { method: endpoint.method, headers };
  if (endpoint.method !== 'GET' && endpoint.method !== 'HEAD') {
    headers.set('content-type', 'application/json');
    init.body = JSON.stringify(validBody(endpoint));
  }
  return call(appOf(endpoint), testEnv, pathFor(endpoint), init);
}

describe('auth matrix', () => {
  it('covers the routes that need credentials on both workers', () => {
    const names = protectedEndpoints.map((endpoint) => `${endpoint.method} ${endpoint.path}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'GET /v1/user/wallet',
        'GET /v1/admin/reconciliation/ledger',
        'POST /v1/chat/completions',
        'GET /v1/developer/provider-keys',
      ]),
    );
  });

  it('refuses every protected route without the right credential, with 401 and the envelope, changing nothing', async () => {
    const before = await databaseFingerprint(testEnv);
    const failures: string[] = [];
    for (const endpoint of protectedEndpoints) {
      for (const [label, token] of refusedCredentials(endpoint)) {
        const response = await send(endpoint, token);
        const body = (await response.json().catch(() => null)) as { error?: { code: string; request_id: string } } | null;
        if (
          response.status !== 401 ||
          body?.error?.code !== 'unauthorized' ||
          body.error.request_id !== response.headers.get('x-request-id')
        ) {
          failures.push(`${endpoint.method} ${endpoint.path} with ${label}: ${response.status} ${JSON.stringify(body)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(await databaseFingerprint(testEnv)).toEqual(before);
  });

  it("hides one end user's provider key from another: 404 on disable, absent from the list, still active", async () => {
    const disable = await call(api(), testEnv, `/v1/user/provider-keys/${world.a.userKeyId}`, {
      method: 'DELETE',
      token: world.b.sessionToken,
    });
    expect(disable.status).toBe(404);
    const list = await call(api(), testEnv, '/v1/user/provider-keys', { token: world.b.sessionToken });
    expect(JSON.stringify(await list.json())).not.toContain(world.a.userKeyId);
    const [row] = await sql<{ status: string }>(testEnv, 'select status from provider_credentials where id = $1', [world.a.userKeyId]);
    expect(row?.status).toBe('active');
  });

  it("hides one developer's provider key from another developer", async () => {
    const disable = await call(api(), testEnv, `/v1/developer/provider-keys/${world.developerKeyIdA}`, {
      method: 'DELETE',
      token: world.developerKeyB,
    });
    expect(disable.status).toBe(404);
    const list = await call(api(), testEnv, '/v1/developer/provider-keys', { token: world.developerKeyB });
    expect(list.status).toBe(200);
    expect(JSON.stringify(await list.json())).not.toContain(world.developerKeyIdA);
    const [row] = await sql<{ status: string }>(testEnv, 'select status from provider_credentials where id = $1', [world.developerKeyIdA]);
    expect(row?.status).toBe('active');
  });

  it('shows each end user only their own wallet and usage', async () => {
    const walletB = await call(api(), testEnv, '/v1/user/wallet', { token: world.b.sessionToken });
    expect(((await walletB.json()) as { wallet_id: string }).wallet_id).toBe(world.b.walletId);
    const usageB = await call(api(), testEnv, '/v1/user/usage', { token: world.b.sessionToken });
    expect(JSON.stringify(await usageB.json())).not.toContain(world.a.walletId);
  });
});
