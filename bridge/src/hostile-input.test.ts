import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../test/support/fake-upstream';
import { rawRequest } from '../test/support/http-request';
import { sessionToken, startTestBridge, usageReport, type TestBridge } from '../test/support/start-test-bridge';
import { parseUpstreamUrl } from './upstream/upstream-kind';

let upstream: FakeUpstream;
let bridge: TestBridge;
beforeAll(async () => {
  upstream = await startFakeUpstream();
  bridge = await startTestBridge({ upstream: parseUpstreamUrl(upstream.url), allowedOrigins: ['https://app.example.com'] });
});
afterAll(async () => {
  await bridge.close();
  await upstream.close();
});

const json = fc.jsonValue({ maxDepth: 3 });
const body = fc.oneof(
  json.map((value) => JSON.stringify(value)),
  fc.string({ maxLength: 200 }),
  fc
    .record({ model: fc.oneof(fc.string(), json), messages: fc.oneof(fc.array(json, { maxLength: 3 }), json) })
    .map((value) => JSON.stringify(value)),
  fc
    .dictionary(fc.constantFrom(...Object.keys(usageReport()), 'prompt', 'text'), json)
    .map((fields) => JSON.stringify({ ...usageReport(), ...fields })),
);

/** Nothing a client sends yields a 500: every answer is a success or the error envelope. */
describe('hostile input', () => {
  it('never answers 500 and always answers errors with the envelope', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'OPTIONS', 'PUT', 'DELETE'),
        fc.constantFrom('/health', '/diagnostics', '/models', '/v1/chat/completions', '/usage/report', '/', '/%00', '/usage/report?x=1'),
        fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', ''),
        fc.constantFrom(undefined, 'https://app.example.com', 'https://evil.example', 'null'),
        fc.constantFrom(`Bearer ${sessionToken}`, 'Bearer ', 'Basic x', ''),
        fc.option(fc.stringMatching(/^[ -~]{0,200}$/), { nil: undefined }),
        body,
        async (method, path, contentType, origin, authorization, requestId, payload) => {
          const headers: Record<string, string> = {};
          if (contentType) headers['content-type'] = contentType;
          if (origin) headers.origin = origin;
          if (authorization) headers.authorization = authorization;
          if (requestId !== undefined) headers['x-request-id'] = requestId;
          const answer = await rawRequest(bridge.port, { method, path, headers, body: method === 'GET' ? undefined : payload });
          expect(answer.status).toBeLessThan(500);
          if (answer.status >= 400) {
            const envelope = answer.json();
            expect(envelope.error.request_id).toBe(answer.headers['x-request-id']);
            expect(typeof envelope.error.code).toBe('string');
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
