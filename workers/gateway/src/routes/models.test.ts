import { describe, expect, it } from 'vitest';
import { call, createTestEnv } from '../../../test/harness.ts';
import { gatewayWith } from '../../../test/gateway-kit.ts';

describe('GET /v1/models', () => {
  it('lists the priced provider:model names in OpenAI list shape, mock:echo included', async () => {
    const response = await call(gatewayWith(), await createTestEnv(), '/v1/models');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { object: string; data: Array<{ id: string; object: string; owned_by: string }> };
    expect(body.object).toBe('list');
    expect(body.data).toContainEqual({ id: 'mock:echo', object: 'model', created: 0, owned_by: 'mock' });
    expect(body.data.every((model) => /^[a-z]+:.+$/.test(model.id))).toBe(true);
  });
});
