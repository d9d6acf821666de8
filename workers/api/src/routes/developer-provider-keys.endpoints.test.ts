/**
 * Stored keys for every catalog provider, and the endpoints azure and custom keys are registered with
 * (migration 0016): the root is checked when stored (public host, no private, loopback, link-local,
 * metadata or wildcard-DNS name, no credentials or stray query), shown back, never the key.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '#shared/crypto.ts';
import { keyProviders } from '#shared/provider-keys/provider-formats.ts';
import { createSession, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';
import { createDeveloper, fakeAnthropicKey, fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const path = '/v1/developer/provider-keys';
const budget = '10.00000000';
const token = (length: number) =>
  randomToken('', length)
    .replace(/[^A-Za-z0-9]/g, 'x')
    .slice(0, length);
const azureRoot = 'https://faucet-test.openai.azure.com/openai';

/** A well-formed key of each provider (never a real one). */
const sampleKeys: Record<(typeof keyProviders)[number], () => string> = {
  openai: fakeOpenAiKey,
  anthropic: fakeAnthropicKey,
  google: () => `AIza${token(35)}`,
  groq: () => `gsk_${token(52)}`,
  xai: () => `xai-${token(80)}`,
  openrouter: () => `sk-or-v1-${token(64)}`,
  mistral: () => token(32),
  deepseek: () => `sk-${token(32)}`,
  together: () => token(64),
  fireworks: () => `fw_${token(24)}`,
  azure: () => token(32),
  custom: () => `vllm-${token(24)}`,
};
const rootOf = (provider: string) =>
  provider === 'azure' ? { base_url: azureRoot } : provider === 'custom' ? { base_url: 'https://llm.example.com/v1' } : {};

async function keyCount(developerId: string): Promise<number> {
  const [row] = await sql<{ n: number }>(testEnv, 'select count(*)::integer as n from provider_credentials where developer_id = $1', [
    developerId,
  ]);
  return row!.n;
}

describe('keys of every provider', () => {
  it.each(keyProviders)('stores a %s key, masked, with the root it is used at', async (provider) => {
    const { key } = await createDeveloper(testEnv);
    const apiKey = sampleKeys[provider]();
    const created = await send(testEnv, path, {
      json: { provider, api_key: apiKey, monthly_budget_usd: budget, ...rootOf(provider) },
      token: key,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ provider, status: 'active', base_url: rootOf(provider).base_url ?? null });
    expect(created.body.masked_key).toMatch(new RegExp(`\\.\\.\\.${apiKey.slice(-4)}$`));
    expect(created.text).not.toContain(apiKey);
    const listed = await send(testEnv, path, { token: key });
    expect(listed.body.data).toEqual([created.body]);
    expect(listed.text).not.toContain(apiKey);
  });

  it('refuses a key of the wrong shape for its provider, writing nothing', async () => {
    const { key, developerId } = await createDeveloper(testEnv);
    for (const [provider, apiKey] of [
      ['groq', fakeOpenAiKey()],
      ['openai', `sk-or-v1-${token(64)}`],
      ['mistral', 'has spaces in it 0123456789'],
      ['together', 'short'],
    ]) {
      const response = await send(testEnv, path, { json: { provider, api_key: apiKey, monthly_budget_usd: budget }, token: key });
      expect(response.status, provider).toBe(400);
      expect(response.body.error.code).toBe('invalid_request');
      expect(response.text).not.toContain(apiKey);
    }
    expect(await keyCount(developerId)).toBe(0);
  });
});

describe('azure and custom endpoints', () => {
  it('keeps the Azure resource root with its api-version, normalised (no trailing slash)', async () => {
    const { key, developerId } = await createDeveloper(testEnv);
    const created = await send(testEnv, path, {
      json: { provider: 'azure', api_key: token(32), monthly_budget_usd: budget, base_url: `${azureRoot}/?api-version=2025-01-01-preview` },
      token: key,
    });
    expect(created.status).toBe(201);
    expect(created.body.base_url).toBe(`${azureRoot}?api-version=2025-01-01-preview`);
    const [row] = await sql<{ base_url: string }>(testEnv, 'select base_url from provider_credentials where developer_id = $1', [
      developerId,
    ]);
    expect(row!.base_url).toBe(`${azureRoot}?api-version=2025-01-01-preview`);
  });

  it.each([
    ['azure without base_url', { provider: 'azure' }, /required for azure/],
    ['custom without base_url', { provider: 'custom' }, /required for custom/],
    [
      'base_url on a provider with its own root',
      { provider: 'openai', api_key: fakeOpenAiKey(), base_url: 'https://proxy.example.com/v1' },
      /only for azure and custom/,
    ],
    ['a private address', { base_url: 'https://10.0.0.8/v1' }, /private/],
    ['a private address over http', { base_url: 'http://192.168.1.20:8000/v1' }, /private/],
    ['loopback', { base_url: 'https://127.0.0.1/v1' }, /loopback/],
    ['loopback in another notation', { base_url: 'https://0x7f.1/v1' }, /loopback/],
    ['IPv6 loopback', { base_url: 'https://[::1]/v1' }, /refused/],
    ['the cloud metadata address', { base_url: 'http://169.254.169.254/latest' }, /link-local/],
    ['an IPv4-mapped IPv6 metadata address', { base_url: 'https://[::ffff:169.254.169.254]/v1' }, /refused/],
    ['a metadata host name', { base_url: 'http://metadata.google.internal/v1' }, /refused/],
    ['a name under localhost', { base_url: 'https://llm.localhost/v1' }, /refused/],
    ['a wildcard-DNS name that maps to a private address (rebinding-style)', { base_url: 'https://10.0.0.8.nip.io/v1' }, /refused/],
    ['another wildcard-DNS service', { base_url: 'https://127-0-0-1.sslip.io/v1' }, /refused/],
    ['credentials in the URL', { base_url: 'https://user:secret@llm.example.com/v1' }, /credentials/],
    ['another scheme', { base_url: 'ftp://llm.example.com/v1' }, /scheme/],
    ['not a URL', { base_url: 'llm.example.com/v1' }, /valid absolute URL/],
    ['a query on a custom root', { base_url: 'https://llm.example.com/v1?key=abc' }, /query/],
    ['a fragment', { base_url: 'https://llm.example.com/v1#x' }, /fragment/],
    [
      'an azure root with another query parameter',
      { provider: 'azure', base_url: `${azureRoot}?api-version=2024-10-21&x=1` },
      /api-version/,
    ],
    ['an azure root with a malformed api-version', { provider: 'azure', base_url: `${azureRoot}?api-version=latest` }, /api-version/],
  ])('refuses %s with 400, writing nothing', async (_, fields, message) => {
    const { key, developerId } = await createDeveloper(testEnv);
    const json = { provider: 'custom', api_key: `vllm-${token(24)}`, monthly_budget_usd: budget, ...fields };
    const response = await send(testEnv, path, { json, token: key });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(message) });
    expect(await keyCount(developerId)).toBe(0);
  });

  it('refuses a smuggled field (a root by another name) with 400', async () => {
    const { key, developerId } = await createDeveloper(testEnv);
    const response = await send(testEnv, path, {
      json: {
        provider: 'custom',
        api_key: `vllm-${token(24)}`,
        monthly_budget_usd: budget,
        base_url: 'https://llm.example.com/v1',
        api_base: 'http://10.0.0.1',
      },
      token: key,
    });
    expect(response.status).toBe(400);
    expect(await keyCount(developerId)).toBe(0);
  });

  it("keeps tenants apart: another developer's endpoint key is 404 to disable, absent from their list, and unchanged", async () => {
    const owner = await createDeveloper(testEnv);
    const intruder = await createDeveloper(testEnv);
    const created = await send(testEnv, path, {
      json: { provider: 'custom', api_key: `vllm-${token(24)}`, monthly_budget_usd: budget, base_url: 'https://llm.example.com/v1' },
      token: owner.key,
    });
    expect(created.status).toBe(201);
    const refused = await send(testEnv, `${path}/${created.body.id}`, { method: 'DELETE', token: intruder.key });
    expect(refused.status).toBe(404);
    expect((await send(testEnv, path, { token: intruder.key })).body.data).toEqual([]);
    expect((await send(testEnv, path, { token: owner.key })).body.data).toEqual([created.body]);
  });

  it('an end user registers their own custom endpoint (BYOK), checked the same way', async () => {
    const session = await createSession(testEnv);
    const userPath = '/v1/user/provider-keys';
    const apiKey = `vllm-${token(24)}`;
    const private_ = await send(testEnv, userPath, {
      json: { provider: 'custom', api_key: apiKey, base_url: 'http://10.1.2.3:8000/v1' },
      token: session.token,
    });
    expect(private_.status).toBe(400);
    const created = await send(testEnv, userPath, {
      json: { provider: 'custom', api_key: apiKey, base_url: 'https://llm.example.com/v1' },
      token: session.token,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      provider: 'custom',
      base_url: 'https://llm.example.com/v1',
      masked_key: `...${apiKey.slice(-4)}`,
    });
    expect(created.text).not.toContain(apiKey);
  });
});
