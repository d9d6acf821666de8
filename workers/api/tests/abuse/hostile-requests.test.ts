/**
 * Hostile requests the fuzzer found answered wrongly, kept as plain examples so each stays fixed:
 * every one must get a 4xx with the envelope, never a 500.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, createTestEnv, gateway, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

async function expectEnvelope(response: Response, status: number, code: string) {
  const body = (await response.json()) as { error: { code: string; request_id: string } };
  expect({ status: response.status, code: body.error.code }).toEqual({ status, code });
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
}

describe('hostile requests found by the fuzzer', () => {
  it.each([
    ['multipart/form-data', '""'],
    ['multipart/form-data; boundary=x', '--x\r\ncontent-disposition: form-data; name="a"\r\n\r\nb\r\n--x--'],
    ['application/x-www-form-urlencoded', 'public_app_id=app_demo_local&external_user_id=u'],
    ['text/plain', '{"public_app_id":"app_demo_local","external_user_id":"u"}'],
  ])('a body sent as %s to a JSON route is refused with 400 invalid_request, not 500', async (contentType, body) => {
    const response = await call(api(), testEnv, '/v1/sessions', { method: 'POST', headers: { 'content-type': contentType }, body });
    await expectEnvelope(response, 400, 'invalid_request');
  });

  it('a wrongly typed body on the gateway is refused with 400', async () => {
    const response = await call(gateway(), testEnv, '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data', authorization: `Bearer fvs_${'A'.repeat(43)}` },
      body: '""',
    });
    expect(response.status).toBeLessThan(500);
  });
});
