/**
 * The caps on live resources (docs/developers.md, "Apps and features"): live apps per developer,
 * live features per app, live keys per developer. A developer one below a cap racing many creations
 * at once gets exactly one; every other racer gets 409 `conflict` in the envelope and nothing is
 * written for it (no row, no audit row). Archived apps and features and revoked keys do not count,
 * and nothing revives one past the cap. The floor holds too: revocations racing for a developer's
 * last two keys leave one live.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Pool } from '@neondatabase/serverless';
import { drizzle } from 'drizzle-orm/neon-serverless';
import { revokeDeveloperKey } from '#shared/developers/revoke-developer-key.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

type Body = Record<string, any>;
const racers = 30;
// The caps (migrations/functions/faucet_cap_live_rows.sql), pinned here as the API's contract.
const maxLiveApps = 100;
const maxLiveFeatures = 100;
const maxLiveKeys = 20;

async function send(token: string, path: string, init: { json?: unknown; method?: string } = {}) {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
}

/** `racers` requests at once; the i-th built by `init(i)`. */
const race = (token: string, path: string, init: (i: number) => { json?: unknown; method?: string }) =>
  Promise.all(Array.from({ length: racers }, (_, i) => send(token, path, init(i))));

/** Exactly one 201; every other racer a 409 conflict in the envelope (the cap's message, its own request id). */
function expectOneWinner(responses: Awaited<ReturnType<typeof send>>[], message: string) {
  expect(responses.map((response) => response.status).sort()).toEqual([201, ...Array(racers - 1).fill(409)]);
  for (const refused of responses.filter((response) => response.status !== 201)) {
    expect(refused.body).toEqual({ error: { code: 'conflict', message, request_id: refused.requestId } });
  }
  return responses.find((response) => response.status === 201)!;
}

/** A new developer (own tenant) and their key. */
async function newDeveloper() {
  const email = `caps-${crypto.randomUUID()}@example.test`;
  const response = await call(api(), testEnv, '/v1/admin/developers', { json: { name: 'Caps', email }, token: adminToken });
  const body = (await response.json()) as Body;
  return { key: body.key.api_key as string, id: body.developer.id as string };
}

/** Everything a creation could write, for one developer: ids of their rows, and the count of all audit rows. */
async function writes(developerId: string) {
  const [row] = await sql<{ audit: number; apps: string[]; features: string[]; keys: string[] }>(
    testEnv,
    `select (select count(*)::int from audit_logs) as audit,
            (select coalesce(json_agg(a.id order by a.id), '[]') from apps a where a.developer_id = $1) as apps,
            (select coalesce(json_agg(f.id order by f.id), '[]') from app_features f join apps a on a.id = f.app_id
              where a.developer_id = $1) as features,
            (select coalesce(json_agg(k.id order by k.id), '[]') from developer_keys k where k.developer_id = $1) as keys`,
    [developerId],
  );
  return row!;
}

const live = async (table: 'apps' | 'features' | 'keys', developerId: string) => {
  const query = {
    apps: 'select count(*)::int as n from apps where developer_id = $1 and archived_at is null',
    features: `select count(*)::int as n from app_features f join apps a on a.id = f.app_id
                where a.developer_id = $1 and f.archived_at is null`,
    keys: 'select count(*)::int as n from developer_keys where developer_id = $1 and revoked_at is null',
  }[table];
  return (await sql<{ n: number }>(testEnv, query, [developerId]))[0]!.n;
};

/** Apps inserted directly (fixtures): `live` live ones and `archived` archived ones. */
async function insertApps(developerId: string, liveCount: number, archivedCount: number) {
  await sql(
    testEnv,
    `insert into apps (developer_id, public_app_id, name, archived_at)
     select $1, 'app_cap_' || replace(gen_random_uuid()::text, '-', ''), 'Cap ' || n, case when n > $2::integer then now() end
       from generate_series(1, $2::integer + $3::integer) n`,
    [developerId, liveCount, archivedCount],
  );
}

describe('caps on live resources under a race', () => {
  it(`live apps: ${racers} creations at once one below the cap make exactly one app`, async () => {
    const developer = await newDeveloper();
    await insertApps(developer.id, maxLiveApps - 1, 2);
    const before = await writes(developer.id);
    const responses = await race(developer.key, '/v1/developer/apps', (i) => ({ json: { name: `Racer ${i}` } }));
    const winner = expectOneWinner(responses, `You already have ${maxLiveApps} live apps: archive one first`);
    expect(await live('apps', developer.id)).toBe(maxLiveApps);
    const after = await writes(developer.id);
    expect(after.audit).toBe(before.audit + 1);
    expect(after.apps).toHaveLength(before.apps.length + 1);
    const [audit] = await sql(testEnv, `select action from audit_logs where target_type = 'app' and target_id = $1`, [
      winner.body.public_app_id,
    ]);
    expect(audit).toEqual({ action: 'app.created' });

    // At the cap: refused one at a time too; archiving one makes room for exactly one.
    const refused = await send(developer.key, '/v1/developer/apps', { json: { name: 'One more' } });
    expect([refused.status, refused.body.error.code]).toEqual([409, 'conflict']);
    expect(await writes(developer.id)).toEqual(after);
    expect((await send(developer.key, `/v1/developer/apps/${winner.body.public_app_id}/archive`, { method: 'POST' })).status).toBe(200);
    expect((await send(developer.key, '/v1/developer/apps', { json: { name: 'Replacement' } })).status).toBe(201);
    expect((await send(developer.key, '/v1/developer/apps', { json: { name: 'Past the cap' } })).status).toBe(409);

    // The cap is per developer: another developer still creates.
    const other = await newDeveloper();
    expect((await send(other.key, '/v1/developer/apps', { json: { name: 'Mine' } })).status).toBe(201);
  });

  it(`live features: ${racers} creations at once one below the cap make exactly one feature`, async () => {
    const developer = await newDeveloper();
    const app = (await send(developer.key, '/v1/developer/apps', { json: { name: 'App' } })).body.public_app_id as string;
    const base = `/v1/developer/apps/${app}/features`;
    expect((await send(developer.key, base, { json: { feature_key: 'chat', name: 'Chat', default_model: 'mock:echo' } })).status).toBe(201);
    await sql(
      testEnv,
      `insert into app_features (app_id, feature_key, name, default_model, archived_at)
       select a.id, 'cap-' || n, 'Cap ' || n, 'mock:echo', case when n > $2::integer then now() end
         from apps a, generate_series(1, $2::integer + 2) n where a.public_app_id = $1`,
      [app, maxLiveFeatures - 2],
    );
    expect(await live('features', developer.id)).toBe(maxLiveFeatures - 1);
    const before = await writes(developer.id);
    const responses = await race(developer.key, base, (i) => ({
      json: { feature_key: `racer-${i}`, name: `Racer ${i}`, default_model: 'mock:echo' },
    }));
    const winner = expectOneWinner(responses, `This app already has ${maxLiveFeatures} live features: archive one first`);
    expect(await live('features', developer.id)).toBe(maxLiveFeatures);
    const after = await writes(developer.id);
    expect(after.audit).toBe(before.audit + 1);
    expect(after.features).toHaveLength(before.features.length + 1);
    const audits = await sql(testEnv, `select action from audit_logs where target_type = 'app_feature' and target_id = $1`, [
      `${app}/${winner.body.feature_key}`,
    ]);
    expect(audits).toEqual([{ action: 'feature.created' }]);

    // Archiving one makes room for exactly one.
    expect((await send(developer.key, `${base}/${winner.body.feature_key}/archive`, { method: 'POST' })).status).toBe(200);
    expect((await send(developer.key, base, { json: { feature_key: 'again', name: 'Again', default_model: 'mock:echo' } })).status).toBe(
      201,
    );
    const refused = await send(developer.key, base, { json: { feature_key: 'over', name: 'Over', default_model: 'mock:echo' } });
    expect([refused.status, refused.body.error.code]).toEqual([409, 'conflict']);
  });

  it(`live keys: ${racers} creations at once one below the cap make exactly one key`, async () => {
    const developer = await newDeveloper();
    await sql(
      testEnv,
      `insert into developer_keys (developer_id, key_hash, prefix, revoked_at)
       select $1, encode(sha256(gen_random_uuid()::text::bytea), 'hex'), 'fdk_cap', case when n > $2::integer then now() end
         from generate_series(1, $2::integer + 2) n`,
      [developer.id, maxLiveKeys - 2],
    );
    expect(await live('keys', developer.id)).toBe(maxLiveKeys - 1);
    const before = await writes(developer.id);
    const responses = await race(developer.key, '/v1/developer/keys', (i) => ({ json: { label: `racer ${i}` } }));
    const winner = expectOneWinner(responses, `At most ${maxLiveKeys} live keys: revoke one first`);
    expect(JSON.stringify(responses.filter((response) => response.status === 409))).not.toContain('fdk_');
    expect(await live('keys', developer.id)).toBe(maxLiveKeys);
    const after = await writes(developer.id);
    expect(after.audit).toBe(before.audit + 1);
    expect(after.keys).toHaveLength(before.keys.length + 1);
    const audits = await sql(testEnv, `select action from audit_logs where target_type = 'developer_key' and target_id = $1`, [
      winner.body.id,
    ]);
    expect(audits).toEqual([{ action: 'developer_key.created' }]);
  });
});

/** A transaction on a connection of its own, held open until `end` (commit; a second call does nothing). */
async function openTransaction() {
  const pool = new Pool({ connectionString: testEnv.DATABASE_URL, max: 1 });
  const client = await pool.connect();
  await client.query('begin');
  let open = true;
  return {
    query: (text: string, params: unknown[]) => client.query(text, params),
    db: drizzle(client),
    async end() {
      if (!open) return;
      open = false;
      try {
        await client.query('commit');
      } finally {
        client.release();
        await pool.end();
      }
    },
  };
}

/** Whether some statement in this test's database is waiting on a lock, within 5 seconds. */
async function someoneWaitsOnALock() {
  for (let attempt = 0; attempt < 100; attempt++) {
    const waiting = await sql(
      testEnv,
      `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
    );
    if (waiting.length > 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** A developer one below a cap, and a statement that takes the last place in a transaction of its own. */
const interleavings = [
  {
    resource: 'apps' as const,
    setUp: async (developer: { id: string; key: string }) => {
      await insertApps(developer.id, maxLiveApps - 1, 0);
      return {
        hold: `insert into apps (developer_id, public_app_id, name) values ($1, 'app_cap_held_' || $2, 'Held')`,
        path: '/v1/developer/apps',
        json: { name: 'Late' },
      };
    },
  },
  {
    resource: 'features' as const,
    setUp: async (developer: { id: string; key: string }) => {
      const app = (await send(developer.key, '/v1/developer/apps', { json: { name: 'App' } })).body.public_app_id as string;
      await sql(
        testEnv,
        `insert into app_features (app_id, feature_key, name, default_model)
         select a.id, 'cap-' || n, 'Cap ' || n, 'mock:echo' from apps a, generate_series(1, $2::integer) n where a.public_app_id = $1`,
        [app, maxLiveFeatures - 1],
      );
      return {
        hold: `insert into app_features (app_id, feature_key, name, default_model)
               select a.id, 'held-' || $2, 'Held', 'mock:echo' from apps a where a.developer_id = $1`,
        path: `/v1/developer/apps/${app}/features`,
        json: { feature_key: 'late', name: 'Late', default_model: 'mock:echo' },
      };
    },
  },
  {
    resource: 'keys' as const,
    setUp: async (developer: { id: string; key: string }) => {
      await sql(
        testEnv,
        `insert into developer_keys (developer_id, key_hash, prefix)
         select $1, encode(sha256(gen_random_uuid()::text::bytea), 'hex'), 'fdk_cap' from generate_series(1, $2::integer) n`,
        [developer.id, maxLiveKeys - 2],
      );
      return {
        hold: `insert into developer_keys (developer_id, key_hash, prefix) values ($1, 'held-' || $2, 'fdk_held')`,
        path: '/v1/developer/keys',
        json: { label: 'late' },
      };
    },
  },
];

describe('caps on live resources against an uncommitted creation', () => {
  it.each(interleavings)(
    '$resource: a creation waits for the one in flight, then counts it (409, nothing written)',
    async ({ resource, setUp }) => {
      const developer = await newDeveloper();
      const { hold, path, json } = await setUp(developer);
      const transaction = await openTransaction();
      let pending: ReturnType<typeof send> | undefined;
      try {
        await transaction.query(hold, [developer.id, crypto.randomUUID()]);
        const before = await writes(developer.id);
        let settled = false;
        pending = send(developer.key, path, { json }).finally(() => {
          settled = true;
        });
        // The creation is parked behind the uncommitted one's lock on the parent row, not done.
        expect(await someoneWaitsOnALock()).toBe(true);
        expect(settled).toBe(false);
        await transaction.end();
        const refused = await pending;
        expect([refused.status, refused.body.error?.code]).toEqual([409, 'conflict']);
        // Only the held row was added: no row and no audit row for the refused creation.
        const after = await writes(developer.id);
        expect(after.audit).toBe(before.audit);
        expect(after[resource]).toHaveLength(before[resource].length + 1);
        expect(await live(resource, developer.id)).toBe({ apps: maxLiveApps, features: maxLiveFeatures, keys: maxLiveKeys }[resource]);
      } finally {
        await transaction.end();
        await pending?.catch(() => undefined);
      }
    },
  );
});

describe('nothing revives a row past a cap', () => {
  it('unarchiving an app, unarchiving or moving a feature, unrevoking a key: refused at the cap', async () => {
    const developer = await newDeveloper();
    await insertApps(developer.id, maxLiveApps - 1, 1);
    const app = (await send(developer.key, '/v1/developer/apps', { json: { name: 'Last' } })).body.public_app_id as string;
    const refusal = { code: 'FC409', message: `You already have ${maxLiveApps} live apps: archive one first` };
    await expect(
      sql(testEnv, 'update apps set archived_at = null where developer_id = $1 and archived_at is not null', [developer.id]),
    ).rejects.toMatchObject(refusal);
    // Moving an app of another developer onto this one.
    const other = await newDeveloper();
    await insertApps(other.id, 1, 0);
    await expect(sql(testEnv, 'update apps set developer_id = $1 where developer_id = $2', [developer.id, other.id])).rejects.toMatchObject(
      refusal,
    );
    expect(await live('apps', developer.id)).toBe(maxLiveApps);

    await sql(
      testEnv,
      `insert into app_features (app_id, feature_key, name, default_model, archived_at)
       select a.id, 'cap-' || n, 'Cap ' || n, 'mock:echo', case when n > $2::integer then now() end
         from apps a, generate_series(1, $2::integer + 1) n where a.public_app_id = $1`,
      [app, maxLiveFeatures],
    );
    const features = { code: 'FC409', message: `This app already has ${maxLiveFeatures} live features: archive one first` };
    await expect(
      sql(
        testEnv,
        `update app_features f set archived_at = null from apps a where a.id = f.app_id and a.public_app_id = $1
                     and f.archived_at is not null`,
        [app],
      ),
    ).rejects.toMatchObject(features);
    const otherApp = (await sql<{ id: string }>(testEnv, 'select id from apps where developer_id = $1', [other.id]))[0]!.id;
    await sql(testEnv, `insert into app_features (app_id, feature_key, name, default_model) values ($1, 'moving', 'Moving', 'mock:echo')`, [
      otherApp,
    ]);
    await expect(
      sql(testEnv, `update app_features set app_id = (select id from apps where public_app_id = $1) where app_id = $2`, [app, otherApp]),
    ).rejects.toMatchObject(features);
    expect(await live('features', developer.id)).toBe(maxLiveFeatures);

    await sql(
      testEnv,
      `insert into developer_keys (developer_id, key_hash, prefix, revoked_at)
       select $1, encode(sha256(gen_random_uuid()::text::bytea), 'hex'), 'fdk_cap', case when n > $2::integer then now() end
         from generate_series(1, $2::integer + 1) n`,
      [developer.id, maxLiveKeys - 1],
    );
    await expect(
      sql(testEnv, 'update developer_keys set revoked_at = null where developer_id = $1 and revoked_at is not null', [developer.id]),
    ).rejects.toMatchObject({ code: 'FC409', message: `At most ${maxLiveKeys} live keys: revoke one first` });
    expect(await live('keys', developer.id)).toBe(maxLiveKeys);

    // Below the cap a revival is an ordinary update.
    await sql(testEnv, `update apps set archived_at = now() where public_app_id = $1`, [app]);
    await sql(testEnv, 'update apps set archived_at = null where public_app_id = $1', [app]);
    expect(await live('apps', developer.id)).toBe(maxLiveApps);
  });
});

describe('the last live key under a race', () => {
  /** A developer with exactly two live keys: the first (from onboarding) and a second. */
  async function twoKeys() {
    const email = `floor-${crypto.randomUUID()}@example.test`;
    const onboarded = (await (
      await call(api(), testEnv, '/v1/admin/developers', { json: { name: 'Floor', email }, token: adminToken })
    ).json()) as Body;
    const first = { id: onboarded.key.id as string, key: onboarded.key.api_key as string };
    const created = await send(first.key, '/v1/developer/keys', { json: { label: 'second' } });
    return {
      developerId: onboarded.developer.id as string,
      first,
      second: { id: created.body.id as string, key: created.body.api_key as string },
    };
  }

  it('a revocation waits for one of the other key in flight, then keeps the last key (409 invalid_state)', async () => {
    const { developerId, first, second } = await twoKeys();
    const transaction = await openTransaction();
    let pending: ReturnType<typeof send> | undefined;
    try {
      // The same statement the API runs, revoking the second key, left uncommitted.
      const held = await revokeDeveloperKey(transaction.db, {
        developerId,
        keyId: second.id,
        actor: { type: 'developer', id: developerId },
        requestId: null,
      });
      expect(held.revokedAt).not.toBeNull();
      const before = await writes(developerId);
      pending = send(first.key, `/v1/developer/keys/${first.id}/revoke`, { method: 'POST' });
      expect(await someoneWaitsOnALock()).toBe(true);
      await transaction.end();
      const refused = await pending;
      expect([refused.status, refused.body.error?.code]).toEqual([409, 'invalid_state']);
      expect((await writes(developerId)).audit).toBe(before.audit + 1); // the held revocation's own audit row
      expect(await live('keys', developerId)).toBe(1);
      expect((await send(first.key, '/v1/developer/keys')).status).toBe(200);
    } finally {
      await transaction.end();
      await pending?.catch(() => undefined);
    }
  });

  it(`${racers} revocations of the last two keys at once (each with the other key) leave exactly one live`, async () => {
    const { developerId, first, second } = await twoKeys();
    const responses = await Promise.all(
      Array.from({ length: racers }, (_, i) => {
        const [token, target] = i % 2 === 0 ? [first.key, second.id] : [second.key, first.id];
        return send(token, `/v1/developer/keys/${target}/revoke`, { method: 'POST' });
      }),
    );
    expect(await live('keys', developerId)).toBe(1);
    // Each racer: revoked (200), refused as the last key (409), or its own key revoked first (401); never a 500.
    for (const response of responses) expect([200, 401, 409]).toContain(response.status);
    const audits = await sql(
      testEnv,
      `select count(*)::int as n from audit_logs where action = 'developer_key.revoked' and actor_id = $1`,
      [developerId],
    );
    expect(audits).toEqual([{ n: 1 }]);
  });
});
