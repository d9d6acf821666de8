import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rawRequest } from '../../test/support/http-request';
import { sessionToken, startTestBridge, usageReport, type TestBridge } from '../../test/support/start-test-bridge';

let bridge: TestBridge;
afterEach(() => bridge?.close());

const post = (body: object | string, headers: Record<string, string> = { authorization: `Bearer ${sessionToken}` }) =>
  rawRequest(bridge.port, { method: 'POST', path: '/usage/report', body, headers: { 'content-type': 'application/json', ...headers } });

const outboxFiles = async () => (await readdir(bridge.outboxDirectory)).filter((name) => name.endsWith('.json'));

describe('POST /usage/report', () => {
  it('answers 202 queued once the report is in a private (0600) outbox file', async () => {
    bridge = await startTestBridge();
    const answer = await post(usageReport());
    expect(answer.status).toBe(202);
    expect(answer.json()).toEqual({ status: 'queued', request_id: 'brq_report-1' });
    const files = await outboxFiles();
    expect(files).toHaveLength(1);
    const path = join(bridge.outboxDirectory, files[0]!);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(bridge.outboxDirectory)).mode & 0o777).toBe(0o700);
    const entry = JSON.parse(await readFile(path, 'utf8'));
    expect(entry).toMatchObject({ report: usageReport(), session_token: sessionToken, attempts: 0 });
    expect((await rawRequest(bridge.port, { path: '/diagnostics' })).json().outbox.pending).toBe(1);
  });

  it.each(['prompt', 'messages', 'content', 'input', 'output', 'text', 'completion'])(
    'refuses a report carrying a %s field and stores nothing',
    async (field) => {
      bridge = await startTestBridge();
      const answer = await post(usageReport({ [field]: 'my secret prompt text' }));
      expect(answer.status).toBe(400);
      expect(answer.json().error.code).toBe('invalid_request');
      expect(answer.json().error.message).toContain(field);
      expect(answer.text).not.toContain('my secret prompt text');
      expect(await outboxFiles()).toHaveLength(0);
    },
  );

  it.each([
    ['a negative token count', { input_tokens: -1 }],
    ['a fractional token count', { output_tokens: 1.5 }],
    ['a route other than local', { route_mode: 'platform' }],
    ['a raw user ID instead of its hash', { user_id_hash: 'user-42' }],
    ['an unsafe request ID', { request_id: 'a b/c' }],
    ['a timestamp that is not ISO-8601', { occurred_at: 'yesterday' }],
    ['a model name with control characters', { model: 'llama\n3' }],
    ['a token count beyond 32 bits', { input_tokens: 2 ** 31 }],
  ])('refuses %s', async (_label, overrides) => {
    bridge = await startTestBridge();
    const answer = await post(usageReport(overrides));
    expect(answer.status).toBe(400);
    expect(await outboxFiles()).toHaveLength(0);
  });

  it('refuses a report without a session token with 401', async () => {
    bridge = await startTestBridge();
    expect((await post(usageReport(), {})).status).toBe(401);
    expect((await post(usageReport(), { authorization: 'Bearer fdk_not-a-session' })).status).toBe(401);
    expect(await outboxFiles()).toHaveLength(0);
  });

  it('refuses an oversized report with 413', async () => {
    bridge = await startTestBridge();
    const answer = await post(usageReport({ model: 'm'.repeat(20_000) }));
    expect(answer.status).toBe(413);
    expect(await outboxFiles()).toHaveLength(0);
  });

  it('keeps the session token out of the log', async () => {
    bridge = await startTestBridge();
    await post(usageReport());
    expect(bridge.logs.join('\n')).not.toContain(sessionToken);
  });
});
