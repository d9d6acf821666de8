/**
 * What the identity tests share: a developer with an app under a given session policy, row counts
 * that prove a refused request wrote nothing, user tokens signed as a developer's backend would
 * sign them, and JWKS documents served in-process (no network) to the API's guarded fetch.
 */
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import { randomToken, sha256Hex } from '#shared/crypto.ts';
import { fakeUpstream, jsonResponse } from './fake-upstream.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { call, sql, type TestEnv } from './harness.ts';
import { createApiApp } from '../api/src/app.ts';
import type { SessionPolicy } from '../api/src/identity/session-policy.ts';

export interface TestApp {
  developerKey: string;
  developerId: string;
  appId: string;
  publicAppId: string;
}

/** A new developer (own fdk_ key) with one app under `policy`. */
export async function createDeveloperApp(
  testEnv: TestEnv,
  options: { policy: SessionPolicy; jwksUrl?: string; origins?: string[] },
): Promise<TestApp> {
  const developerKey = randomToken('fdk_');
  const suffix = crypto.randomUUID().slice(0, 8);
  const [developer] = await sql<{ id: string }>(
    testEnv,
    `with d as (insert into developers (name, email) values ('Test', $1) returning id),
     k as (insert into developer_keys (developer_id, key_hash, prefix) select id, $2, 'fdk_' from d)
     select id from d`,
    [`dev-${suffix}@example.test`, await sha256Hex(developerKey)],
  );
  const publicAppId = `app_${suffix}`;
  const [app] = await sql<{ id: string }>(
    testEnv,
    `insert into apps (developer_id, public_app_id, name, session_policy, jwks_url, allowed_origins)
     values ($1, $2, 'Test app', $3, $4, $5::jsonb) returning id`,
    [developer!.id, publicAppId, options.policy, options.jwksUrl ?? null, JSON.stringify(options.origins ?? [])],
  );
  return { developerKey, developerId: developer!.id, appId: app!.id, publicAppId };
}

/** The rows a session creation writes; equal before and after = nothing written. */
export async function sessionRowCounts(testEnv: TestEnv) {
  const [row] = await sql<{ sessions: string; users: string; wallets: string }>(
    testEnv,
    `select (select count(*) from virtual_sessions) as sessions, (select count(*) from end_users) as users,
            (select count(*) from wallets) as wallets`,
  );
  return row!;
}

/** A user token as a developer's backend signs it: `sub`, `aud`, `iat`, `nbf`, `exp` five minutes out. */
export function userTokenClaims(publicAppId: string, sub: string, overrides: JWTPayload = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return { sub, aud: publicAppId, iat: now, nbf: now, exp: now + 300, ...overrides };
}

export function signHs256(secret: string, claims: JWTPayload, header: { kid?: string } = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', ...header }).sign(new TextEncoder().encode(secret));
}

export interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256' | 'EdDSA';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function signingKey(alg: SigningKey['alg'], kid = `kid-${crypto.randomUUID().slice(0, 8)}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

export function signWith(key: SigningKey, claims: JWTPayload): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid }).sign(key.privateKey);
}

/** A developer's JWKS endpoint played in-process; `keys` may be changed between requests (rotation). */
export function jwksHost() {
  const state = { keys: [] as JWK[] };
  const upstream = fakeUpstream(() => jsonResponse({ keys: state.keys }));
  // A host of its own per test: the API caches key sets by URL.
  const url = `https://auth-${crypto.randomUUID().slice(0, 8)}.example.com/.well-known/jwks.json`;
  return { url, state, fetch: upstream.fetch, requests: upstream.requests };
}

/** `POST /v1/sessions` through an API whose JWKS fetches go to `fetch`. */
export function askForSession(
  testEnv: TestEnv,
  body: Record<string, unknown>,
  options: { token?: string; origin?: string; fetch?: FetchFunction } = {},
) {
  const headers: Record<string, string> = options.origin ? { origin: options.origin } : {};
  return call(createApiApp({ fetch: options.fetch }), testEnv, '/v1/sessions', { json: body, token: options.token, headers });
}
