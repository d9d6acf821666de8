import { describe, expect, it } from 'vitest';
import { providerCatalog } from '../providers/provider-catalog.ts';
import { fakeUpstream, jsonResponse } from '../../test/fake-upstream.ts';
import { checkKeyLive, liveCheckEnabled } from './live-check.ts';
import { keyProviders, maskKey, validateKeyFormat } from './provider-formats.ts';

describe('provider key formats', () => {
  it.each([
    ['openai', 'sk-proj-abcdefghijklmnopqrstuvwxyz0123', 'sk-proj-...0123'],
    ['openai', 'sk-fake_abcdefghijklmnopqrstuvABCD', 'sk-...ABCD'],
    ['openai', 'sk-svcacct-abcdefghijklmnopqrst_9876', 'sk-svcacct-...9876'],
    ['anthropic', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz-AA_z', 'sk-ant-api03-...AA_z'],
  ] as const)('accepts a %s key and masks it as prefix + last four', (provider, key, masked) => {
    expect(() => validateKeyFormat(provider, key)).not.toThrow();
    expect(maskKey(provider, key)).toBe(masked);
  });

  it('only offers providers the gateway can route', () => {
    for (const provider of keyProviders) expect(Object.keys(providerCatalog)).toContain(provider);
  });
});

describe('live key check (off unless PROVIDER_KEY_LIVE_CHECK=true)', () => {
  it('is off by default', () => {
    expect(liveCheckEnabled({})).toBe(false);
    expect(liveCheckEnabled({ PROVIDER_KEY_LIVE_CHECK: 'true' })).toBe(true);
  });

  it("asks the provider's models endpoint with the key, and refuses a key the provider refuses", async () => {
    const accepting = fakeUpstream(() => jsonResponse({ data: [] }));
    await checkKeyLive('openai', 'sk-proj-abcdefghijklmnopqrstuvwxyz', { fetch: accepting.fetch });
    expect(accepting.requests[0]).toMatchObject({ url: 'https://api.openai.com/v1/models', method: 'GET' });
    expect(accepting.requests[0]!.headers.authorization).toBe('Bearer sk-proj-abcdefghijklmnopqrstuvwxyz');

    const anthropic = fakeUpstream(() => jsonResponse({ data: [] }));
    await checkKeyLive('anthropic', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz', { fetch: anthropic.fetch });
    expect(anthropic.requests[0]!.headers['x-api-key']).toBe('sk-ant-api03-abcdefghijklmnopqrstuvwxyz');

    const refusing = fakeUpstream(() => jsonResponse({ error: 'bad key' }, 401));
    await expect(checkKeyLive('openai', 'sk-proj-abcdefghijklmnopqrstuvwxyz', { fetch: refusing.fetch })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    const down = fakeUpstream(() => jsonResponse({}, 503));
    await expect(checkKeyLive('openai', 'sk-proj-abcdefghijklmnopqrstuvwxyz', { fetch: down.fetch })).rejects.toMatchObject({
      code: 'upstream_error',
    });
  });

  it.each(['http://127.0.0.1:8080/v1', 'http://169.254.169.254/latest', 'http://10.0.0.5/v1', 'http://[::1]/v1', 'http://localhost/v1'])(
    'never sends a key to a private address (%s)',
    async (baseUrl) => {
      const upstream = fakeUpstream(() => jsonResponse({ data: [] }));
      await expect(checkKeyLive('openai', 'sk-proj-abcdefghijklmnopqrstuvwxyz', { fetch: upstream.fetch, baseUrl })).rejects.toMatchObject({
        code: 'upstream_error',
      });
      expect(upstream.requests).toHaveLength(0);
    },
  );
});
