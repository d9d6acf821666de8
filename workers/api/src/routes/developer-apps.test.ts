/**
 * `/v1/developer/apps` (docs/developers.md, "Apps and features"): create, list, read, update and
 * archive, each change audited with before/after, bad input refused with nothing written, and an
 * archived app refusing sessions and changes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

type Body = Record<string, any>;

/** A new developer (own tenant) and their key. */
async function newDeveloper() {
  const email = `apps-${crypto.randomUUID()}@example.test`;
  const response = await call(api(), testEnv, '/v1/admin/developers', { json: { name: 'Apps', email }, token: adminToken });
  const body = (await response.json()) as Body;
  return { key: body.key.api_key as string, id: body.developer.id as string };
}

async function send(token: string, path: string, init: { json?: unknown; method?: string } = {}) {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
}

const appAudit = (publicAppId: string) =>
  sql<{ action: string; actor_type: string; actor_id: string; request_id: string; metadata: Body }>(
    testEnv,
    `select action, actor_type, actor_id, request_id, metadata from audit_logs where target_type = 'app' and target_id = $1 order by id`,
    [publicAppId],
  );

const writes = () =>
  sql(
    testEnv,
    `select (select count(*) from audit_logs) as audit, (select count(*) from apps) as apps,
            (select json_agg(a order by a.id) from apps a) as rows`,
  );

describe('apps of a developer', () => {
  it('creates an app with a generated public_app_id and default settings, audited with its request id', async () => {
    const developer = await newDeveloper();
    const created = await send(developer.key, '/v1/developer/apps', { json: { name: '  Notes  ' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      public_app_id: expect.stringMatching(/^app_[A-Za-z0-9_]{16}$/),
      name: 'Notes',
      default_feature_key: null,
      limits: { spend_per_day_usd: null, spend_per_month_usd: null, requests_per_minute: null },
      session_policy: 'server',
      allowed_origins: [],
      created_at: expect.any(String),
      archived_at: null,
    });
    const id = created.body.public_app_id as string;
    expect((await send(developer.key, `/v1/developer/apps/${id}`)).body).toEqual(created.body);
    expect(await appAudit(id)).toEqual([
      {
        action: 'app.created',
        actor_type: 'developer',
        actor_id: developer.id,
        request_id: created.requestId,
        metadata: {
          before: null,
          after: {
            name: 'Notes',
            default_feature_key: null,
            limits: { spend_per_day_usd: null, spend_per_month_usd: null, requests_per_minute: null },
            archived_at: null,
          },
        },
      },
    ]);
  });

  it('stores limits given at creation as exact amounts', async () => {
    const developer = await newDeveloper();
    const created = await send(developer.key, '/v1/developer/apps', {
      json: {
        name: 'Limited',
        limits: { spend_per_day_usd: '0.00000001', spend_per_month_usd: '999999999999.99999999', requests_per_minute: 60 },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.limits).toEqual({
      spend_per_day_usd: '0.00000001',
      spend_per_month_usd: '999999999999.99999999',
      requests_per_minute: 60,
    });
    const [row] = await sql<{ day: string; month: string }>(
      testEnv,
      'select limit_spend_per_day_usd::text as day, limit_spend_per_month_usd::text as month from apps where public_app_id = $1',
      [created.body.public_app_id],
    );
    expect(row).toEqual({ day: '0.00000001', month: '999999999999.99999999' });
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '   ' }],
    ['a name with control characters', { name: 'a\u0007b' }],
    ['an unknown field', { name: 'x', public_app_id: 'app_mine' }],
    ['a smuggled developer', { name: 'x', developer_id: '00000000-0000-0000-0000-000000000000' }],
    ['an unknown limit', { name: 'x', limits: { tokens_per_day: 5 } }],
    ['a zero spend limit', { name: 'x', limits: { spend_per_day_usd: '0.00000000' } }],
    ['a negative spend limit', { name: 'x', limits: { spend_per_day_usd: '-1.00000000' } }],
    ['a float spend limit', { name: 'x', limits: { spend_per_month_usd: 5.5 } }],
    ['a spend limit with 2 decimals', { name: 'x', limits: { spend_per_month_usd: '5.50' } }],
    ['a spend limit with 9 decimals', { name: 'x', limits: { spend_per_month_usd: '5.500000001' } }],
    ['a zero rate', { name: 'x', limits: { requests_per_minute: 0 } }],
    ['a fractional rate', { name: 'x', limits: { requests_per_minute: 1.5 } }],
    ['a rate above the maximum', { name: 'x', limits: { requests_per_minute: 10_001 } }],
    ['a rate as a string', { name: 'x', limits: { requests_per_minute: '60' } }],
  ])('refuses %s with 400 in the envelope and writes nothing', async (_, json) => {
    const developer = await newDeveloper();
    const before = await writes();
    const refused = await send(developer.key, '/v1/developer/apps', { json });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', request_id: refused.requestId });
    expect(await writes()).toEqual(before);
  });

  it('lists apps newest first, a page at a time, and only the caller’s', async () => {
    const developer = await newDeveloper();
    const other = await newDeveloper();
    await send(other.key, '/v1/developer/apps', { json: { name: 'Not yours' } });
    const ids: string[] = [];
    for (const name of ['one', 'two', 'three']) {
      ids.push((await send(developer.key, '/v1/developer/apps', { json: { name } })).body.public_app_id);
    }
    const first = await send(developer.key, '/v1/developer/apps?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((app: Body) => app.name)).toEqual(['three', 'two']);
    expect(first.body.next_cursor).toBe(ids[1]);
    const second = await send(developer.key, `/v1/developer/apps?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body).toMatchObject({ data: [{ name: 'one' }], next_cursor: null });
    // Another developer's app id as a cursor reveals nothing.
    const foreign = (await send(other.key, '/v1/developer/apps')).body.data[0].public_app_id;
    expect((await send(developer.key, `/v1/developer/apps?cursor=${foreign}`)).body).toEqual({ data: [], next_cursor: null });
    expect((await send(developer.key, '/v1/developer/apps?limit=0')).status).toBe(400);
    expect((await send(developer.key, '/v1/developer/apps?cursor=bad%20cursor')).status).toBe(400);
  });

  it('updates name and limits: fields left out keep their value, null clears; audited before/after; a no-op writes nothing', async () => {
    const developer = await newDeveloper();
    const id = (
      await send(developer.key, '/v1/developer/apps', {
        json: { name: 'Before', limits: { spend_per_day_usd: '1.00000000', spend_per_month_usd: '20.00000000', requests_per_minute: 30 } },
      })
    ).body.public_app_id;
    const path = `/v1/developer/apps/${id}`;
    const updated = await send(developer.key, path, {
      method: 'PATCH',
      json: { name: 'After', limits: { spend_per_day_usd: '2.50000000', requests_per_minute: null } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'After',
      limits: { spend_per_day_usd: '2.50000000', spend_per_month_usd: '20.00000000', requests_per_minute: null },
    });
    const audit = await appAudit(id);
    expect(audit.at(-1)).toMatchObject({
      action: 'app.updated',
      actor_id: developer.id,
      request_id: updated.requestId,
      metadata: {
        before: {
          name: 'Before',
          limits: { spend_per_day_usd: '1.00000000', spend_per_month_usd: '20.00000000', requests_per_minute: 30 },
        },
        after: {
          name: 'After',
          limits: { spend_per_day_usd: '2.50000000', spend_per_month_usd: '20.00000000', requests_per_minute: null },
        },
      },
    });

    const before = await writes();
    const same = await send(developer.key, path, { method: 'PATCH', json: { name: 'After', limits: { requests_per_minute: null } } });
    expect(same.status).toBe(200);
    expect(await writes()).toEqual(before);
    for (const json of [{}, { limits: {} }, { archived_at: null }, { limits: { spend_per_day_usd: '0.00000000' } }, { name: '' }]) {
      const refused = await send(developer.key, path, { method: 'PATCH', json });
      expect([JSON.stringify(json), refused.status, refused.body.error?.code]).toEqual([JSON.stringify(json), 400, 'invalid_request']);
    }
    expect(await writes()).toEqual(before);
  });

  it('sets the default feature only to a live feature of the same app', async () => {
    const developer = await newDeveloper();
    const id = (await send(developer.key, '/v1/developer/apps', { json: { name: 'Defaults' } })).body.public_app_id;
    const other = (await send(developer.key, '/v1/developer/apps', { json: { name: 'Other' } })).body.public_app_id;
    const feature = (key: string, app = id) =>
      send(developer.key, `/v1/developer/apps/${app}/features`, { json: { feature_key: key, name: key, default_model: 'mock:echo' } });
    await feature('first');
    await feature('second');
    await feature('elsewhere', other);
    await feature('retired');
    expect((await send(developer.key, `/v1/developer/apps/${id}/features/retired/archive`, { method: 'POST' })).status).toBe(200);

    const before = await writes();
    for (const key of ['missing', 'elsewhere', 'retired', 'bad key']) {
      const refused = await send(developer.key, `/v1/developer/apps/${id}`, { method: 'PATCH', json: { default_feature_key: key } });
      expect([key, refused.status, refused.body.error.code]).toEqual([key, 400, 'invalid_request']);
    }
    expect(await writes()).toEqual(before);
    const switched = await send(developer.key, `/v1/developer/apps/${id}`, { method: 'PATCH', json: { default_feature_key: 'second' } });
    expect(switched.status).toBe(200);
    expect(switched.body.default_feature_key).toBe('second');
    expect((await send(developer.key, `/v1/developer/apps/${id}/features/second`)).body.is_default).toBe(true);
  });

  it('shows the session policy and allowed origins set through the identity endpoints', async () => {
    const developer = await newDeveloper();
    const id = (await send(developer.key, '/v1/developer/apps', { json: { name: 'Browser' } })).body.public_app_id;
    const origins = await send(developer.key, `/v1/developer/apps/${id}/allowed-origins`, {
      method: 'PUT',
      json: { allowed_origins: ['https://notes.example.com'] },
    });
    expect(origins.status).toBe(200);
    await send(developer.key, `/v1/developer/apps/${id}/session-policy`, { method: 'PATCH', json: { session_policy: 'anonymous' } });
    expect((await send(developer.key, `/v1/developer/apps/${id}`)).body).toMatchObject({
      session_policy: 'anonymous',
      allowed_origins: ['https://notes.example.com'],
    });
  });
});

describe('an archived app', () => {
  it('is archived once (idempotent, one audit row), stays readable, and refuses sessions and every change', async () => {
    const developer = await newDeveloper();
    const id = (await send(developer.key, '/v1/developer/apps', { json: { name: 'Old' } })).body.public_app_id;
    await send(developer.key, `/v1/developer/apps/${id}/features`, {
      json: { feature_key: 'chat', name: 'Chat', default_model: 'mock:echo' },
    });
    const session = () =>
      call(api(), testEnv, '/v1/sessions', { json: { public_app_id: id, external_user_id: 'u-1' }, token: developer.key });
    expect((await session()).status).toBe(201);

    const archived = await send(developer.key, `/v1/developer/apps/${id}/archive`, { method: 'POST' });
    expect(archived.status).toBe(200);
    expect(archived.body.archived_at).toEqual(expect.any(String));
    const again = await send(developer.key, `/v1/developer/apps/${id}/archive`, { method: 'POST' });
    expect(again.body.archived_at).toBe(archived.body.archived_at);
    const audit = await appAudit(id);
    expect(audit.filter((row) => row.action === 'app.archived')).toEqual([
      expect.objectContaining({
        request_id: archived.requestId,
        metadata: { before: expect.objectContaining({ archived_at: null }), after: expect.objectContaining({ name: 'Old' }) },
      }),
    ]);
    expect(audit.at(-1)?.metadata.after.archived_at).toEqual(expect.any(String));

    const before = await writes();
    const refusedSession = await session();
    expect(refusedSession.status).toBe(403);
    expect(((await refusedSession.json()) as Body).error.code).toBe('forbidden');
    const changes = [
      { method: 'PATCH', path: `/v1/developer/apps/${id}`, json: { name: 'New' } },
      {
        method: 'POST',
        path: `/v1/developer/apps/${id}/features`,
        json: { feature_key: 'more', name: 'More', default_model: 'mock:echo' },
      },
      { method: 'PATCH', path: `/v1/developer/apps/${id}/features/chat`, json: { name: 'Renamed' } },
      { method: 'PATCH', path: `/v1/developer/apps/${id}/session-policy`, json: { session_policy: 'anonymous' } },
      { method: 'PUT', path: `/v1/developer/apps/${id}/allowed-origins`, json: { allowed_origins: ['https://a.example.com'] } },
      { method: 'POST', path: `/v1/developer/apps/${id}/signing-secrets`, json: {} },
    ];
    for (const change of changes) {
      const refused = await send(developer.key, change.path, { method: change.method, json: change.json });
      expect([change.path, refused.status, refused.body.error.code]).toEqual([change.path, 409, 'invalid_state']);
    }
    expect(await writes()).toEqual(before);
    expect(
      await sql(testEnv, `select 1 from app_signing_secrets s join apps a on a.id = s.app_id where a.public_app_id = $1`, [id]),
    ).toEqual([]);
    expect((await send(developer.key, `/v1/developer/apps/${id}`)).body.archived_at).toBe(archived.body.archived_at);
    expect((await send(developer.key, `/v1/developer/apps/${id}/features`)).status).toBe(200);
  });
});

describe('the OpenAPI document', () => {
  it('describes every app and feature endpoint, with closed request bodies', async () => {
    const response = await call(api(), testEnv, '/openapi.json');
    const document = (await response.json()) as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { $ref?: string } }> } }>>;
      components: { schemas: Record<string, { additionalProperties?: boolean }> };
    };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const app = '/v1/developer/apps/{public_app_id}';
    expect(operations).toEqual(
      expect.arrayContaining([
        'POST /v1/developer/apps',
        'GET /v1/developer/apps',
        `GET ${app}`,
        `PATCH ${app}`,
        `POST ${app}/archive`,
        `POST ${app}/features`,
        `GET ${app}/features`,
        `GET ${app}/features/{feature_key}`,
        `PATCH ${app}/features/{feature_key}`,
        `POST ${app}/features/{feature_key}/archive`,
      ]),
    );
    for (const name of ['CreateAppRequest', 'UpdateAppRequest', 'AppLimitsRequest', 'CreateFeatureRequest', 'UpdateFeatureRequest']) {
      expect([name, document.components.schemas[name]?.additionalProperties]).toEqual([name, false]);
    }
  });
});
