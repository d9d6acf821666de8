/**
 * The bridge under hostile input, forwarding to the real control API of the test stack: malformed,
 * oversized and wrongly typed bodies, hostile headers (Host, Origin, Authorization, request ids) and
 * paths. Never a 500; every error is the envelope; a refused usage report never reaches the outbox;
 * the bridge's logs never hold the session token or the prompt text.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../bridge/test/support/fake-upstream';
import { rawRequest } from '../../bridge/test/support/http-request';
import { startTestBridge, usageReport, type TestBridge } from '../../bridge/test/support/start-test-bridge';
import { parseUpstreamUrl } from '../../bridge/src/upstream/upstream-kind';
import { createSession } from '../load/stack-client.ts';

const stack = inject('stack');
const runs = Number(process.env.FAUCET_FUZZ_RUNS) || 300;
const prompt = `BRIDGE-PROMPT-CANARY-${crypto.randomUUID()}`;

let upstream: FakeUpstream;
let bridge: TestBridge;
let sessionToken: string;
const queued: string[] = [];
beforeAll(async () => {
  sessionToken = await createSession(stack, `bridge-fuzz-${crypto.randomUUID()}`);
  upstream = await startFakeUpstream();
  bridge = await startTestBridge({
    upstream: parseUpstreamUrl(upstream.url),
    apiBaseUrl: stack.apiUrl,
    allowedOrigins: ['https://app.example.com'],
  });
  const put = bridge.services.outbox.put.bind(bridge.services.outbox);
  bridge.services.outbox.put = async (entry) => {
    queued.push(JSON.stringify(entry));
    return put(entry);
  };
});
afterAll(async () => {
  await bridge.close(1000);
  await upstream.close();
});

const json = fc.jsonValue({ maxDepth: 3 });
const wrong = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 40 }),
  fc.constant(-1),
  fc.array(json, { maxLength: 2 }),
);
const reportFields = Object.keys(usageReport());
const body = fc.oneof(
  json.map((value) => JSON.stringify(value)),
  fc.string({ maxLength: 200 }),
  fc.constantFrom('{"model": ', '[1,2,', '', 'null', '\u0000'),
  fc.constant('x'.repeat(40 * 1024)),
  fc
    .record({
      model: fc.oneof(fc.constant('llama3.2:3b'), fc.string(), json),
      messages: fc.oneof(fc.constant([{ role: 'user', content: prompt }]), json),
    })
    .map((value) => JSON.stringify(value)),
  fc
    .dictionary(fc.constantFrom(...reportFields, 'prompt', 'messages', 'text', '__proto__'), wrong, { minKeys: 1, maxKeys: 3 })
    .map((fields) =>
      JSON.stringify({ ...usageReport({ request_id: `bfz-${crypto.randomUUID()}`, public_app_id: stack.publicAppId }), ...fields }),
    ),
  fc.constant(null).map(() => JSON.stringify({ ...usageReport({ request_id: `bfz-${crypto.randomUUID()}` }), prompt })),
  fc.constant(null).map(() => JSON.stringify(usageReport({ request_id: `bfz-${crypto.randomUUID()}`, public_app_id: stack.publicAppId }))),
);

/** The well-formed choice half of the time, so that hostile bodies also reach the deepest checks. */
function likely<T>(usual: T, others: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof({ arbitrary: fc.constant(usual), weight: 1 }, { arbitrary: others, weight: 1 });
}

describe('bridge fuzzing', () => {
  it(`never answers 500, always the envelope, and a refused report is never queued (${runs} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(
        likely('POST', fc.constantFrom('GET', 'POST', 'OPTIONS', 'PUT', 'DELETE', 'PATCH')),
        likely(
          '/usage/report',
          fc.constantFrom(
            '/health',
            '/diagnostics',
            '/models',
            '/v1/chat/completions',
            '/',
            '/%00',
            '/usage/report/',
            '//usage/report',
            '/usage/report?x=%zz',
            '/../../etc/passwd',
          ),
        ),
        likely('application/json', fc.constantFrom('text/plain', 'multipart/form-data', 'application/json; charset=utf-8', '')),
        likely(undefined, fc.constantFrom('https://app.example.com', 'https://evil.example', 'null', 'http://127.0.0.1:1')),
        likely(undefined, fc.constantFrom('evil.example', 'localhost.evil.example', '127.0.0.1:1')),
        likely(`Bearer ${sessionToken}`, fc.constantFrom('Bearer ', 'Basic x', '', `Bearer fvs_${'A'.repeat(43)}`)),
        fc.option(fc.stringMatching(/^[ -~]{0,200}$/), { nil: undefined }),
        body,
        async (method, path, contentType, origin, host, authorization, requestId, payload) => {
          const headers: Record<string, string> = {};
          if (contentType) headers['content-type'] = contentType;
          if (origin) headers.origin = origin;
          if (host) headers.host = host;
          if (authorization) headers.authorization = authorization;
          if (requestId !== undefined) headers['x-request-id'] = requestId;
          const before = queued.length;
          const answer = await rawRequest(bridge.port, { method, path, headers, body: method === 'GET' ? undefined : payload });
          expect(answer.status, `${method} ${path}`).toBeLessThan(500);
          if (answer.status >= 400) {
            const envelope = answer.json();
            expect(envelope.error.request_id).toBe(answer.headers['x-request-id']);
            expect(typeof envelope.error.code).toBe('string');
            expect(queued.length, `${method} ${path} → ${answer.status} queued a report`).toBe(before);
          }
        },
      ),
      { numRuns: runs },
    );
    // The watch on the outbox sees what it should: a well-formed report is queued.
    const before = queued.length;
    const accepted = await rawRequest(bridge.port, {
      method: 'POST',
      path: '/usage/report',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sessionToken}` },
      body: usageReport({ request_id: `bfz-${crypto.randomUUID()}`, public_app_id: stack.publicAppId }),
    });
    expect(accepted.status).toBe(202);
    expect(queued.length).toBe(before + 1);
    // The outbox keeps the session token (it forwards with it later, from a private directory); logs keep neither.
    expect(bridge.logs.join('\n')).not.toContain(sessionToken);
    expect([...bridge.logs, ...queued].join('\n')).not.toContain(prompt);
  });
});
