/**
 * The session auth matrix (docs/identity.md): for each session policy, every way of asking for a
 * session without the app's backing — no proof, a wrong or another developer's key, forged or
 * unfit user tokens, a JWKS on a private address — is refused with 401/403 in the envelope and
 * writes no session, end user or wallet; the ways the developer chose work.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { api, call, createTestEnv, demoPublicAppId, developerKey as demoDeveloperKey, sql, type TestEnv } from '../../../test/harness.ts';
import {
  askForSession,
  createDeveloperApp,
  jwksHost,
  sessionRowCounts,
  signHs256,
  signingKey,
  signWith,
  userTokenClaims,
  type TestApp,
} from '../../../test/identity-kit.ts';

let testEnv: TestEnv;
let otherDeveloper: TestApp;
beforeAll(async () => {
  testEnv = await createTestEnv();
  otherDeveloper = await createDeveloperApp(testEnv, { policy: 'server' });
});

interface Attempt {
  body: Record<string, unknown>;
  token?: string;
  origin?: string;
  fetch?: FetchFunction;
}

/** Asks, and proves the refusal: status, envelope, and not one row written. */
async function expectRefused(attempt: Attempt, status: 401 | 403) {
  const before = await sessionRowCounts(testEnv);
  const response = await askForSession(testEnv, attempt.body, attempt);
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  expect(response.status).toBe(status);
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe(status === 401 ? 'unauthorized' : 'forbidden');
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  expect(await sessionRowCounts(testEnv)).toEqual(before);
  return body.error.message;
}

async function expectSession(attempt: Attempt) {
  const response = await askForSession(testEnv, attempt.body, attempt);
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as { session_token: string; session_id: string; user_ref: string };
}

async function createSecret(app: TestApp, previousValidForSeconds?: number) {
  const response = await call(api(), testEnv, `/v1/developer/apps/${app.publicAppId}/signing-secrets`, {
    json: previousValidForSeconds === undefined ? {} : { previous_valid_for_seconds: previousValidForSeconds },
    token: app.developerKey,
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; signing_secret: string };
}

const unknownDeveloperKey = `fdk_${'Q'.repeat(43)}`;

describe('server policy (the default)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createDeveloperApp(testEnv, { policy: 'server' });
  });

  it.each<[string, () => Attempt, 401 | 403]>([
    ['no proof at all', () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'alice' } }), 401],
    [
      'an unknown developer key',
      () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'alice' }, token: unknownDeveloperKey }),
      401,
    ],
    [
      'another developer’s key',
      () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'alice' }, token: otherDeveloper.developerKey }),
      403,
    ],
    [
      'a session token instead of a developer key',
      () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'alice' }, token: `fvs_${'A'.repeat(43)}` }),
      401,
    ],
    ['a device id', () => ({ body: { public_app_id: app.publicAppId, device_id: 'd'.repeat(32) } }), 401],
  ])('refuses %s', async (_name, attempt, status) => {
    await expectRefused(attempt(), status);
  });

  it('refuses a user token, however well signed: the app verifies none', async () => {
    const token = await signHs256('any-secret-at-all', userTokenClaims(app.publicAppId, 'alice'));
    await expectRefused({ body: { public_app_id: app.publicAppId, user_token: token } }, 401);
  });

  it("mints a session with the app developer's key", async () => {
    await expectSession({ body: { public_app_id: app.publicAppId, external_user_id: 'alice' }, token: app.developerKey });
  });

  it('is the policy of the seeded demo app', async () => {
    await expectRefused({ body: { public_app_id: demoPublicAppId, external_user_id: 'demo-user' } }, 401);
    await expectSession({ body: { public_app_id: demoPublicAppId, external_user_id: 'demo-user' }, token: demoDeveloperKey });
  });
});

describe('signed policy with an app signing secret (HS256)', () => {
  let app: TestApp;
  let secret: string;
  beforeAll(async () => {
    app = await createDeveloperApp(testEnv, { policy: 'signed' });
    secret = (await createSecret(app)).signing_secret;
  });
  const claims = (overrides = {}) => userTokenClaims(app.publicAppId, 'carol@example.com', overrides);
  const now = () => Math.floor(Date.now() / 1000);

  it.each<[string, () => Promise<Attempt>]>([
    ['no token', async () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'carol@example.com' } })],
    ['alg: none', async () => ({ body: { public_app_id: app.publicAppId, user_token: unsecured(claims()) } })],
    [
      'a token signed with another secret',
      async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256('fss_guessed', claims()) } }),
    ],
    [
      'a wrong aud',
      async () => ({
        body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ aud: otherDeveloper.publicAppId })) },
      }),
    ],
    ['no aud', async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ aud: undefined })) } })],
    [
      'an expired token',
      async () => ({
        body: {
          public_app_id: app.publicAppId,
          user_token: await signHs256(secret, claims({ iat: now() - 400, nbf: now() - 400, exp: now() - 100 })),
        },
      }),
    ],
    [
      'a token not valid yet (nbf)',
      async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ nbf: now() + 120 })) } }),
    ],
    [
      'a token issued in the future (iat)',
      async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ iat: now() + 120 })) } }),
    ],
    [
      'an exp more than 10 minutes out',
      async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ exp: now() + 3600 })) } }),
    ],
    ['no exp', async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ exp: undefined })) } })],
    ['no nbf', async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ nbf: undefined })) } })],
    [
      'a sub that is not external_user_id',
      async () => ({
        body: { public_app_id: app.publicAppId, external_user_id: 'dave@example.com', user_token: await signHs256(secret, claims()) },
      }),
    ],
    [
      'an oversized token',
      async () => ({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims({ pad: 'x'.repeat(5000) })) } }),
    ],
    [
      'an RS256 token (not the app’s algorithm)',
      async () => ({ body: { public_app_id: app.publicAppId, user_token: await signWith(await signingKey('RS256'), claims()) } }),
    ],
    [
      'an unknown developer key',
      async () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'carol@example.com' }, token: unknownDeveloperKey }),
    ],
  ])('refuses %s with 401', async (_name, attempt) => {
    await expectRefused(await attempt(), 401);
  });

  it('refuses another developer’s key with 403', async () => {
    await expectRefused(
      { body: { public_app_id: app.publicAppId, external_user_id: 'carol@example.com' }, token: otherDeveloper.developerKey },
      403,
    );
  });

  it('mints a session for the sub of a token signed with the app secret, with or without external_user_id', async () => {
    const first = await expectSession({ body: { public_app_id: app.publicAppId, user_token: await signHs256(secret, claims()) } });
    const second = await expectSession({
      body: { public_app_id: app.publicAppId, external_user_id: 'carol@example.com', user_token: await signHs256(secret, claims()) },
    });
    expect(second.user_ref).toBe(first.user_ref);
  });

  it("still mints with the developer's key", async () => {
    await expectSession({ body: { public_app_id: app.publicAppId, external_user_id: 'carol@example.com' }, token: app.developerKey });
  });
});

describe('signing secret rotation', () => {
  it('keeps the previous secret verifying until the end of the overlap window, then never again', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'signed' });
    const first = await createSecret(app);
    const second = await createSecret(app, 600);
    const claims = () => userTokenClaims(app.publicAppId, 'erin');
    await expectSession({ body: { public_app_id: app.publicAppId, user_token: await signHs256(first.signing_secret, claims()) } });
    await expectSession({ body: { public_app_id: app.publicAppId, user_token: await signHs256(second.signing_secret, claims()) } });
    // A kid naming the secret picks it.
    await expectSession({
      body: { public_app_id: app.publicAppId, user_token: await signHs256(second.signing_secret, claims(), { kid: second.id }) },
    });
    await expectRefused(
      { body: { public_app_id: app.publicAppId, user_token: await signHs256(first.signing_secret, claims(), { kid: second.id }) } },
      401,
    );

    // The overlap window ends.
    await sql(testEnv, `update app_signing_secrets set retires_at = now() - interval '1 second' where id = $1`, [first.id]);
    await expectRefused({ body: { public_app_id: app.publicAppId, user_token: await signHs256(first.signing_secret, claims()) } }, 401);
    await expectSession({ body: { public_app_id: app.publicAppId, user_token: await signHs256(second.signing_secret, claims()) } });
  });

  it('retires the previous secret at once with previous_valid_for_seconds: 0', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'signed' });
    const leaked = await createSecret(app);
    await createSecret(app, 0);
    await expectRefused(
      {
        body: {
          public_app_id: app.publicAppId,
          user_token: await signHs256(leaked.signing_secret, userTokenClaims(app.publicAppId, 'erin')),
        },
      },
      401,
    );
  });

  it('stores the secret sealed, never as written', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'signed' });
    const created = await createSecret(app);
    const rows = await sql(testEnv, 'select * from app_signing_secrets where app_id = $1', [app.appId]);
    expect(JSON.stringify(rows)).not.toContain(created.signing_secret);
    const audit = await sql(testEnv, `select * from audit_logs where action = 'app.signing_secret_created' and target_id = $1`, [
      app.appId,
    ]);
    expect(audit).toHaveLength(1);
    expect(JSON.stringify(audit)).not.toContain(created.signing_secret);
  });
});

describe('signed policy with the developer’s JWKS', () => {
  it.each(['RS256', 'ES256', 'EdDSA'] as const)('mints a session for a %s token whose kid the JWKS lists', async (alg) => {
    const host = jwksHost();
    const key = await signingKey(alg);
    host.state.keys = [key.publicJwk];
    const app = await createDeveloperApp(testEnv, { policy: 'signed', jwksUrl: host.url });
    await expectSession({
      body: { public_app_id: app.publicAppId, user_token: await signWith(key, userTokenClaims(app.publicAppId, 'frank')) },
      fetch: host.fetch,
    });
    expect(host.requests.map((request) => request.url)).toEqual([host.url]);
  });

  it.each<[string, (context: { app: TestApp; key: Awaited<ReturnType<typeof signingKey>> }) => Promise<string>]>([
    ['alg: none', async ({ app }) => unsecured(userTokenClaims(app.publicAppId, 'frank'))],
    // Algorithm confusion: HMAC "signed" with the public key's text, which an attacker can read.
    [
      'an HS256 token keyed with the public JWK text',
      async ({ app, key }) => signHs256(JSON.stringify(key.publicJwk), userTokenClaims(app.publicAppId, 'frank'), { kid: key.kid }),
    ],
    [
      'an HS256 token keyed with the public key modulus',
      async ({ app, key }) => signHs256(String(key.publicJwk.n), userTokenClaims(app.publicAppId, 'frank'), { kid: key.kid }),
    ],
    [
      'a token signed by a key the JWKS does not list',
      async ({ app, key }) => signWith({ ...(await signingKey('RS256')), kid: key.kid }, userTokenClaims(app.publicAppId, 'frank')),
    ],
    ['a wrong aud', async ({ key }) => signWith(key, userTokenClaims(otherDeveloper.publicAppId, 'frank'))],
    [
      'an expired token',
      async ({ app, key }) =>
        signWith(
          key,
          userTokenClaims(app.publicAppId, 'frank', { iat: Math.floor(Date.now() / 1000) - 400, exp: Math.floor(Date.now() / 1000) - 60 }),
        ),
    ],
    [
      'an exp more than 10 minutes out',
      async ({ app, key }) => signWith(key, userTokenClaims(app.publicAppId, 'frank', { exp: Math.floor(Date.now() / 1000) + 86_400 })),
    ],
  ])('refuses %s with 401', async (_name, forge) => {
    const host = jwksHost();
    const key = await signingKey('RS256');
    host.state.keys = [key.publicJwk];
    const app = await createDeveloperApp(testEnv, { policy: 'signed', jwksUrl: host.url });
    await expectRefused({ body: { public_app_id: app.publicAppId, user_token: await forge({ app, key }) }, fetch: host.fetch }, 401);
  });

  it.each([
    'https://127.0.0.1/jwks.json',
    'https://169.254.169.254/latest/meta-data',
    'https://10.0.0.7/jwks.json',
    'https://auth.localhost/jwks.json',
    'http://auth.example.com/jwks.json',
  ])('refuses every token when the JWKS URL is %s, without fetching it', async (jwksUrl) => {
    const host = jwksHost();
    const key = await signingKey('RS256');
    host.state.keys = [key.publicJwk];
    const app = await createDeveloperApp(testEnv, { policy: 'signed', jwksUrl });
    await expectRefused(
      {
        body: { public_app_id: app.publicAppId, user_token: await signWith(key, userTokenClaims(app.publicAppId, 'frank')) },
        fetch: host.fetch,
      },
      401,
    );
    expect(host.requests).toEqual([]);
  });

  it('follows a key rotation by kid: a new kid refetches the JWKS once, a made-up kid does not refetch again within the cooldown', async () => {
    const host = jwksHost();
    const oldKey = await signingKey('ES256');
    host.state.keys = [oldKey.publicJwk];
    const app = await createDeveloperApp(testEnv, { policy: 'signed', jwksUrl: host.url });
    const ask = async (key: typeof oldKey) => ({
      body: { public_app_id: app.publicAppId, user_token: await signWith(key, userTokenClaims(app.publicAppId, 'gina')) },
      fetch: host.fetch,
    });
    await expectSession(await ask(oldKey));
    await expectSession(await ask(oldKey));
    expect(host.requests).toHaveLength(1); // cached

    // A made-up kid right after a fetch: refused without hammering the developer's JWKS.
    await expectRefused(await ask(await signingKey('ES256')), 401);
    expect(host.requests).toHaveLength(1);

    // The developer rotates; once the cooldown has passed, a token with the new kid refetches and works.
    const newKey = await signingKey('ES256');
    host.state.keys = [newKey.publicJwk];
    const withNewKey = await ask(newKey);
    const withOldKey = await ask(oldKey);
    const realNow = Date.now;
    Date.now = () => realNow() + 31_000;
    try {
      await expectSession(withNewKey);
      expect(host.requests).toHaveLength(2);
      await expectRefused(withOldKey, 401); // retired from the JWKS
    } finally {
      Date.now = realNow;
    }
  });
});

describe('anonymous policy', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createDeveloperApp(testEnv, { policy: 'anonymous' });
  });
  const deviceId = () => crypto.randomUUID().replace(/-/g, '');

  it.each<[string, () => Attempt, 401 | 403]>([
    ['no device id', () => ({ body: { public_app_id: app.publicAppId } }), 401],
    [
      'an external_user_id of its choosing',
      () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'victim@example.com' } }),
      403,
    ],
    [
      'an external_user_id beside a device id',
      () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'victim@example.com', device_id: deviceId() } }),
      403,
    ],
    [
      'an unknown developer key',
      () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'x' }, token: unknownDeveloperKey }),
      401,
    ],
    [
      'another developer’s key',
      () => ({ body: { public_app_id: app.publicAppId, external_user_id: 'x' }, token: otherDeveloper.developerKey }),
      403,
    ],
  ])('refuses %s', async (_name, attempt, status) => {
    await expectRefused(attempt(), status);
  });

  it('refuses a device id with fewer than 128 random bits', async () => {
    const response = await askForSession(testEnv, { public_app_id: app.publicAppId, device_id: 'abc123' });
    expect(response.status).toBe(400);
  });

  it('binds the session to the device: the same device is the same end user, another device another one', async () => {
    const device = deviceId();
    const first = await expectSession({ body: { public_app_id: app.publicAppId, device_id: device } });
    const again = await expectSession({ body: { public_app_id: app.publicAppId, device_id: device } });
    const other = await expectSession({ body: { public_app_id: app.publicAppId, device_id: deviceId() } });
    expect(again.user_ref).toBe(first.user_ref);
    expect(other.user_ref).not.toBe(first.user_ref);
  });

  it('keeps device users apart from named users: a device id equal to a user id is another end user', async () => {
    const name = 'AAAAAAAAAAAAAAAAAAAAAAAA';
    const named = await expectSession({ body: { public_app_id: app.publicAppId, external_user_id: name }, token: app.developerKey });
    const device = await expectSession({ body: { public_app_id: app.publicAppId, device_id: name } });
    expect(device.user_ref).not.toBe(named.user_ref);
  });
});

describe('browser origins', () => {
  it('refuses session creation from an origin the app does not list, and answers CORS for a listed one', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'anonymous', origins: ['https://good.example'] });
    const body = { public_app_id: app.publicAppId, device_id: crypto.randomUUID().replace(/-/g, '') };
    const message = await expectRefused({ body, origin: 'https://evil.example' }, 403);
    expect(message).toMatch(/origin/);
    const response = await askForSession(testEnv, body, { origin: 'https://good.example' });
    expect(response.status).toBe(201);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://good.example');
  });

  it('refuses a browser origin for an app that lists none, even with the developer key', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'server' });
    await expectRefused(
      { body: { public_app_id: app.publicAppId, external_user_id: 'x' }, token: app.developerKey, origin: 'https://any.example' },
      403,
    );
  });
});

/** An unsecured JWT (`alg: none`), built by hand: no library signs one. */
function unsecured(claims: Record<string, unknown>): string {
  const part = (value: unknown) => btoa(JSON.stringify(value)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}
