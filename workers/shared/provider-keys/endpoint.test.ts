import { describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse } from '../../test/fake-upstream.ts';
import { endpointFor } from './endpoint.ts';
import { checkKeyLive } from './live-check.ts';

const production = { ENVIRONMENT: 'production' };

describe('registered endpoint roots', () => {
  it('must use https in production; elsewhere http to a public host is allowed', () => {
    expect(() => endpointFor('custom', 'http://llm.example.com/v1', production)).toThrow(/must use https/);
    expect(endpointFor('custom', 'https://llm.example.com/v1/', production)).toBe('https://llm.example.com/v1');
    expect(endpointFor('custom', 'http://llm.example.com/v1', {})).toBe('http://llm.example.com/v1');
  });

  it('allows the one loopback port of a local stack outside production only', () => {
    const local = { UPSTREAM_ALLOW_LOOPBACK: '127.0.0.1:8787' };
    expect(endpointFor('custom', 'http://127.0.0.1:8787/v1', local)).toBe('http://127.0.0.1:8787/v1');
    expect(() => endpointFor('custom', 'http://127.0.0.1:8788/v1', local)).toThrow(/loopback/);
    expect(() => endpointFor('custom', 'http://127.0.0.1:8787/v1', { ...local, ...production })).toThrow(/loopback/);
  });

  it("returns null (the catalog's root) for providers with a root of their own", () => {
    expect(endpointFor('openai', undefined, production)).toBeNull();
  });
});

describe('live check of a registered root', () => {
  it('asks <root>/models with the key in the provider’s header (Azure: api-key and its api-version)', async () => {
    const upstream = fakeUpstream(() => jsonResponse({ data: [] }));
    await checkKeyLive('azure', 'azure-key-0123456789abcdef', {
      fetch: upstream.fetch,
      baseUrl: 'https://contoso.openai.azure.com/openai?api-version=2025-01-01-preview',
    });
    expect(upstream.requests[0]).toMatchObject({
      url: 'https://contoso.openai.azure.com/openai/models?api-version=2025-01-01-preview',
      headers: { 'api-key': 'azure-key-0123456789abcdef' },
    });
  });

  it('does not follow a redirect to a private address: refused, one request only', async () => {
    const upstream = fakeUpstream(
      () => new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data' } }),
    );
    const failure = await checkKeyLive('custom', 'custom-key-0123456789abcdef', {
      fetch: upstream.fetch,
      baseUrl: 'https://llm.example.com/v1',
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'upstream_error', message: expect.stringMatching(/redirect/) });
    expect(upstream.requests.map((request) => request.url)).toEqual(['https://llm.example.com/v1/models']);
  });
});
