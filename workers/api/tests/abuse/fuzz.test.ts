/**
 * Property-based fuzzing of every route of the API and the gateway: malformed, oversized, wrongly
 * typed and hostile bodies, headers, methods and paths, with and without valid credentials. Never a
 * 500; every error is the envelope with the response's request id; a refused request leaves every
 * row of the database as it was. `VITE_FAUCET_FUZZ_RUNS` sets the number of runs (npm run test:abuse uses 2000).
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { fund, settled } from '../../../test/gateway-kit.ts';
import { call, createTestEnv, type TestEnv } from '../../../test/harness.ts';
import { allEndpoints, appOf, buildWorld, databaseFingerprint, fillPath, validBody, type Endpoint, type World } from './abuse-kit.ts';

const runs = Number((import.meta as { env?: Record<string, string | undefined> }).env?.VITE_FAUCET_FUZZ_RUNS) || 300;
/** `VITE_FAUCET_FUZZ_SEED` replays a run (fast-check prints the seed of a failure). */
const seed = Number((import.meta as { env?: Record<string, string | undefined> }).env?.VITE_FAUCET_FUZZ_SEED) || undefined;

let testEnv: TestEnv;
let world: World;
beforeAll(async () => {
  testEnv = await createTestEnv();
  world = await buildWorld(testEnv);
  await fund(testEnv, world.a.walletId, '1.00000000');
});

const endpoints = allEndpoints();

const hostileText = fc.constantFrom(
  '',
  ' ',
  '../../etc/passwd',
  '%00',
  '%2e%2e%2f',
  "' or 1=1 --",
  '"; drop table wallets; --',
  '{{7*7}}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log-injection payload, sent as a literal string
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '\u202e\u0000\u0007',
  '𝕏'.repeat(50),
  'a'.repeat(5000),
  '-1',
  '1e309',
  'NaN',
  '00000000-0000-0000-0000-000000000000',
  'null',
);
const anyText = fc.oneof(hostileText, fc.string({ maxLength: 80 }), fc.uuid());

/** A JSON value of the wrong kind for most fields. */
const wrongValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.constant(-1),
  fc.constant(1e308),
  anyText,
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
);

function mutate(value: unknown, edits: Array<{ op: 'set' | 'delete' | 'add'; index: number; key: string; value: unknown }>): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  const keys = Object.keys(copy);
  for (const edit of edits) {
    const key = keys.length ? keys[edit.index % keys.length]! : edit.key;
    if (edit.op === 'delete') delete copy[key];
    else if (edit.op === 'set') copy[key] = edit.value;
    else copy[edit.key] = edit.value;
  }
  return copy;
}

const bodyEdits = fc.array(
  fc.record({
    op: fc.constantFrom('set', 'delete', 'add'),
    index: fc.nat(),
    key: fc.constantFrom('prompt', 'messages', '__proto__', 'constructor', 'amount_usd', 'extra', 'stream', 'route_mode'),
    value: wrongValue,
  }),
  { minLength: 1, maxLength: 3 },
);

type BodyPlan =
  | { kind: 'none' }
  | { kind: 'valid' }
  | { kind: 'mutated'; edits: Array<{ op: 'set' | 'delete' | 'add'; index: number; key: string; value: unknown }> }
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'oversized'; bytes: number }
  | { kind: 'deep'; depth: number }
  | { kind: 'binary'; bytes: Uint8Array };

const bodyPlan: fc.Arbitrary<BodyPlan> = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.constant({ kind: 'valid' as const }),
  bodyEdits.map((edits) => ({ kind: 'mutated' as const, edits })),
  bodyEdits.map((edits) => ({ kind: 'mutated' as const, edits })),
  fc.jsonValue({ maxDepth: 3 }).map((value) => ({ kind: 'json' as const, value })),
  fc
    .oneof(fc.string({ maxLength: 200 }), hostileText, fc.constant('{"model": '), fc.constant('[1,2,'))
    .map((text) => ({ kind: 'text' as const, text })),
  fc.constantFrom(300 * 1024, 3 * 1024 * 1024).map((bytes) => ({ kind: 'oversized' as const, bytes })),
  fc.integer({ min: 100, max: 5000 }).map((depth) => ({ kind: 'deep' as const, depth })),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => ({ kind: 'binary' as const, bytes })),
);

function bodyOf(plan: BodyPlan, endpoint: Endpoint): BodyInit | undefined {
  switch (plan.kind) {
    case 'none':
      return undefined;
    case 'valid':
      return JSON.stringify(validBody(endpoint, world.a.userRef));
    case 'mutated':
      return JSON.stringify(mutate(validBody(endpoint, world.a.userRef), plan.edits));
    case 'json':
      return JSON.stringify(plan.value);
    case 'text':
      return plan.text;
    case 'oversized':
      return JSON.stringify({ ...(validBody(endpoint, world.a.userRef) as object), padding: 'x'.repeat(plan.bytes) });
    case 'deep':
      return '['.repeat(plan.depth) + ']'.repeat(plan.depth);
    case 'binary':
      return Uint8Array.from(plan.bytes);
  }
}

const credential = fc.constantFrom('right', 'none', 'garbage', 'other-kind', 'expired', 'tenant-b');

function tokenFor(choice: string, endpoint: Endpoint): string | undefined {
  const right: Record<string, string | undefined> = {
    session: world.a.sessionToken,
    developer: world.developerKeyA,
    admin: world.adminToken,
    public: undefined,
    stripe: undefined,
  };
  switch (choice) {
    case 'right':
      return right[endpoint.caller];
    case 'garbage':
      return 'garbage';
    case 'other-kind':
      return endpoint.caller === 'session' ? world.developerKeyA : world.a.sessionToken;
    case 'expired':
      return world.expiredSessionToken;
    case 'tenant-b':
      return endpoint.caller === 'developer' ? world.developerKeyB : world.b.sessionToken;
    default:
      return undefined;
  }
}

function knownId(name: string, endpoint: Endpoint): string {
  if (endpoint.path.startsWith('/v1/user/provider-keys')) return world.a.userKeyId;
  if (endpoint.path.startsWith('/v1/developer/provider-keys')) return world.developerKeyIdA;
  if (name === 'wallet_id' || endpoint.path.startsWith('/v1/admin/wallets')) return world.a.walletId;
  return crypto.randomUUID();
}

const request = fc.record({
  endpoint: fc.constantFrom(...endpoints),
  method: fc.oneof(
    { arbitrary: fc.constant('own'), weight: 4 },
    { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'), weight: 1 },
  ),
  param: fc.option(anyText, { nil: undefined }),
  suffix: fc.constantFrom('', '/', '//', '?limit=-1', '?limit=abc', '?limit=1e9', '?from=2026-02-30&to=x', '/..', '%2F..', '?status=bogus'),
  credential,
  contentType: fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data',
    undefined,
  ),
  requestId: fc.option(
    fc.oneof(
      fc.stringMatching(/^[ -~]{0,300}$/),
      hostileText.filter((text) => /^[ -~]*$/.test(text)),
    ),
    { nil: undefined },
  ),
  extraHeader: fc.option(fc.constantFrom('x-forwarded-for', 'cf-connecting-ip', 'origin', 'stripe-signature', 'accept'), {
    nil: undefined,
  }),
  extraValue: fc.stringMatching(/^[ -~]{0,100}$/),
  body: bodyPlan,
});

describe('fuzzing every route', () => {
  it(`never answers 500, always answers errors with the envelope, and a refused request changes nothing (${runs} runs)`, async () => {
    let fingerprint = await databaseFingerprint(testEnv);
    await fc.assert(
      fc.asyncProperty(request, async (input) => {
        const endpoint = input.endpoint;
        const method = input.method === 'own' ? endpoint.method : input.method;
        const path =
          fillPath(endpoint.path, (name) => (input.param === undefined ? knownId(name, endpoint) : encodeURIComponent(input.param))) +
          input.suffix;
        const headers = new Headers();
        const token = tokenFor(input.credential, endpoint);
        if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
        if (input.contentType) headers.set('content-type', input.contentType);
        if (input.requestId !== undefined) headers.set('x-request-id', input.requestId);
        if (input.extraHeader) headers.set(input.extraHeader, input.extraValue);
        const body = method === 'GET' || method === 'HEAD' ? undefined : bodyOf(input.body, endpoint);

        const response = await call(appOf(endpoint), testEnv, path, { method, headers, ...(body === undefined ? {} : { body }) });
        const label = `${method} ${path.slice(0, 120)} → ${response.status}`;
        // An answered gateway call is booked by its wallet object after the answer (a flush on the
        // object's alarm): wait for it here, or it lands inside a later refused request's window.
        if (response.status < 400) await settled(testEnv);
        const before = fingerprint;
        const after = await databaseFingerprint(testEnv);
        // Set before any expectation can throw: when fast-check shrinks a failure, each rerun must
        // compare against the state the previous run left, or a stale fingerprint blames a harmless request.
        fingerprint = after;
        expect(response.status, label).toBeLessThan(500);
        if (response.status >= 400) {
          if (method !== 'HEAD') {
            const envelope = (await response.json()) as { error: { code: string; message: string; request_id: string } };
            expect(typeof envelope.error.code, label).toBe('string');
            expect(typeof envelope.error.message, label).toBe('string');
            expect(envelope.error.request_id, label).toBe(response.headers.get('x-request-id'));
          }
          const changed = Object.keys(after).filter((table) => after[table] !== before[table]);
          expect(changed, `${label}: a refused request changed these tables`).toEqual([]);
        }
      }),
      { numRuns: runs, ...(seed === undefined ? {} : { seed }) },
    );
  }, 600_000);
});
