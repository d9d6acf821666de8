/**
 * `POST /v1/admin/provider-keys/re-encrypt` read as an attacker and as a tired operator: run while
 * calls use the keys it rewrites, run twice at once, and meeting a key disabled or replaced between
 * its read and its write. No call fails, no key is lost or sealed twice (every row still opens, under
 * the new version alone, to the key its owner gave), each key is re-encrypted and audited once.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayWith } from '../../../test/gateway-kit.ts';
import { adminToken, api, call, createDatabase, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { expectReconciledAndAudited } from '../../../test/ledger-kit.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';
import type { Db } from '#shared/db.ts';
import { encodeBase64, keyringFrom } from '#shared/provider-keys/keyring.ts';
import { reEncryptProviderKeys } from '#shared/provider-keys/re-encrypt.ts';
import { openKey } from '#shared/provider-keys/seal.ts';

let v1Env: TestEnv;
const newEntry = `v2:${encodeBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('ok')));
const gateway = gatewayWith({ upstreamFetch: upstream.fetch });
const platformKey = 'sk-platform-pool-key-for-tests-000000';

beforeAll(async () => {
  v1Env = await createTestEnv({ OPENAI_API_KEY: platformKey });
  expect(v1Env.PROVIDER_KEY_ENCRYPTION_KEY).toMatch(/^v1:/);
});

/** Step 1 of a rotation: the new key first, the old one still listed (docs/provider-keys.md). */
const rotating = () => ({ ...v1Env, PROVIDER_KEY_ENCRYPTION_KEY: `${newEntry},${v1Env.PROVIDER_KEY_ENCRYPTION_KEY}` });

const reEncrypt = () => call(api(), rotating(), '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });

/** An end user with a byok key of their own, and the key. */
async function byokUser() {
  const session = await fundedSession(v1Env, '1.00000000');
  const key = fakeOpenAiKey();
  const stored = await send(v1Env, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: key }, token: session.token });
  expect(stored.status).toBe(201);
  return { session, key, id: stored.body.id as string };
}

async function developerProviderKey(testEnv: TestEnv = v1Env) {
  const key = fakeOpenAiKey();
  const stored = await send(testEnv, '/v1/developer/provider-keys', {
    json: { provider: 'openai', api_key: key, monthly_budget_usd: '5.00000000' },
    token: developerKey,
  });
  expect(stored.status).toBe(201);
  return { key, id: stored.body.id as string };
}

const disableDeveloperKey = async (id: string) =>
  expect((await send(v1Env, `/v1/developer/provider-keys/${id}`, { method: 'DELETE', token: developerKey })).status).toBe(200);

/** A chat call whose message names it, so the upstream request it made can be found. */
async function namedCall(testEnv: TestEnv, token: string, routeMode: 'byok' | 'developer_key' | 'platform', name: string) {
  const response = await chat(gateway, testEnv, token, {
    model: 'openai:gpt-4o-mini',
    feature: 'chat',
    route_mode: routeMode,
    max_tokens: 7,
    messages: [{ role: 'user', content: name }],
  });
  return { name, status: response.status, text: response.status === 200 ? '' : await response.text() };
}

const keyOfCall = (name: string) =>
  upstream.requests
    .filter((request) => (request.body as { messages?: { content: string }[] }).messages?.[0]?.content === name)
    .map((request) => request.headers.authorization);

/** Every stored key opens under the new version alone to exactly the key its owner gave. */
async function expectEveryKeyOpensUnderV2(given: Map<string, string>) {
  const keyring = await keyringFrom(newEntry);
  const rows = await sql<{ id: string; provider: string; ciphertext: string; iv: string; key_version: number }>(
    v1Env,
    'select id, provider, ciphertext, iv, key_version from provider_credentials',
  );
  for (const row of rows) {
    expect(row.key_version, row.id).toBe(2);
    const plaintext = await openKey(
      keyring,
      { ciphertext: row.ciphertext, iv: row.iv, keyVersion: row.key_version },
      {
        credentialId: row.id,
        provider: row.provider,
      },
    );
    if (given.has(row.id)) expect(plaintext).toBe(given.get(row.id));
  }
}

/** Rows re-encrypted per key, as the audit log has them. */
async function reEncryptionsPerKey() {
  const rows = await sql<{ id: string; n: number }>(
    v1Env,
    `select k.id, (select count(*)::int from audit_logs a where a.action = 'provider_key.re_encrypted' and a.target_id = k.id::text) as n
       from provider_credentials k`,
  );
  return new Map(rows.map((row) => [row.id, row.n]));
}

/** A database handle whose first statement (the batch's write) waits for `meanwhile` to run first. */
function writingAfter(db: Db, meanwhile: () => Promise<void>): Db {
  let due = true;
  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver);
      return async (...args: Parameters<Db['execute']>) => {
        if (due) {
          due = false;
          await meanwhile();
        }
        return target.execute(...args);
      };
    },
  });
}

describe('POST /v1/admin/provider-keys/re-encrypt under traffic', () => {
  it('twice at once while byok, developer-key and platform calls run: every call succeeds with its own key, each key re-encrypted once', async () => {
    const users = [];
    for (let index = 0; index < 12; index++) users.push(await byokUser());
    const developer = await developerProviderKey();
    const given = new Map([...users.map((user) => [user.id, user.key] as const), [developer.id, developer.key]]);

    const traffic = users.flatMap((user, index) => [
      () => namedCall(rotating(), user.session.token, 'byok', `byok-${index}-a`),
      () => namedCall(rotating(), user.session.token, 'developer_key', `developer-${index}`),
      () => namedCall(rotating(), user.session.token, 'byok', `byok-${index}-b`),
      () => namedCall(rotating(), user.session.token, 'platform', `platform-${index}`),
    ]);
    const [first, second, ...calls] = await Promise.all([reEncrypt(), reEncrypt(), ...traffic.map((run) => run())]);

    for (const result of calls) expect(result.status, `${result.name}: ${result.text}`).toBe(200);
    for (const [index, user] of users.entries()) {
      expect(keyOfCall(`byok-${index}-a`)).toEqual([`Bearer ${user.key}`]);
      expect(keyOfCall(`byok-${index}-b`)).toEqual([`Bearer ${user.key}`]);
      expect(keyOfCall(`developer-${index}`)).toEqual([`Bearer ${developer.key}`]);
      expect(keyOfCall(`platform-${index}`)).toEqual([`Bearer ${platformKey}`]);
    }

    expect([first!.status, second!.status]).toEqual([200, 200]);
    const counts = await Promise.all(
      [first!, second!].map(async (response) => ((await response.json()) as { re_encrypted: number }).re_encrypted),
    );
    expect(counts[0]! + counts[1]!).toBe(given.size);
    expect([...(await reEncryptionsPerKey()).values()]).toEqual(Array(given.size).fill(1));
    expect(await (await reEncrypt()).json()).toMatchObject({ current_key_version: 2, re_encrypted: 0, unreadable: 0, remaining: 0 });
    await expectEveryKeyOpensUnderV2(given);
    await expectReconciledAndAudited(v1Env);
  });
});

describe('a re-encryption meeting another change of the same key between its read and its write', () => {
  it('another re-encryption wrote first: this one changes nothing, the key is sealed once', async () => {
    const user = await byokUser();
    const keyring = await keyringFrom(rotating().PROVIDER_KEY_ENCRYPTION_KEY);
    const database = createDatabase(v1Env);
    try {
      let other: { re_encrypted: number } | undefined;
      const result = await reEncryptProviderKeys(
        writingAfter(database.db, async () => {
          other = (await (await reEncrypt()).json()) as { re_encrypted: number };
        }),
        keyring,
        { actor: { type: 'admin', id: null }, requestId: 'req-late-re-encrypt' },
      );
      expect(other!.re_encrypted).toBeGreaterThanOrEqual(1);
      expect(result).toMatchObject({ reEncrypted: 0, remaining: 0, unreadable: 0 });
    } finally {
      await database.pool.end();
    }
    expect((await reEncryptionsPerKey()).get(user.id)).toBe(1);
    await expectEveryKeyOpensUnderV2(new Map([[user.id, user.key]]));
    const call = await namedCall(rotating(), user.session.token, 'byok', 'after-the-race');
    expect(call.status, call.text).toBe(200);
    expect(keyOfCall('after-the-race')).toEqual([`Bearer ${user.key}`]);
    await expectReconciledAndAudited(v1Env);
  });

  it('the developer replaced the key (disabled it, added a new one): the old stays disabled, both open, calls take the new one', async () => {
    // The developer holds one active key per provider: the earlier test's goes first.
    const active = await sql<{ id: string }>(
      v1Env,
      `select id from provider_credentials where owner_type = 'developer' and status = 'active'`,
    );
    for (const { id } of active) await disableDeveloperKey(id);
    const old = await developerProviderKey();
    const session = await fundedSession(v1Env, '1.00000000');
    let replacement: { key: string; id: string } | undefined;
    const keyring = await keyringFrom(rotating().PROVIDER_KEY_ENCRYPTION_KEY);
    const database = createDatabase(v1Env);
    try {
      const result = await reEncryptProviderKeys(
        writingAfter(database.db, async () => {
          await disableDeveloperKey(old.id);
          // Written during the rotation, so under the new version already.
          replacement = await developerProviderKey(rotating());
        }),
        keyring,
        { actor: { type: 'admin', id: null }, requestId: 'req-re-encrypt-during-replace' },
      );
      expect(result).toMatchObject({ reEncrypted: 1, remaining: 0, unreadable: 0 });
    } finally {
      await database.pool.end();
    }
    const rows = await sql<{ id: string; status: string; key_version: number }>(
      v1Env,
      'select id, status, key_version from provider_credentials where id = any($1::uuid[]) order by created_at',
      [[old.id, replacement!.id]],
    );
    expect(rows).toEqual([
      { id: old.id, status: 'disabled', key_version: 2 },
      { id: replacement!.id, status: 'active', key_version: 2 },
    ]);
    const perKey = await reEncryptionsPerKey();
    expect([perKey.get(old.id), perKey.get(replacement!.id)]).toEqual([1, 0]);
    await expectEveryKeyOpensUnderV2(
      new Map([
        [old.id, old.key],
        [replacement!.id, replacement!.key],
      ]),
    );
    const call = await namedCall(rotating(), session.token, 'developer_key', 'after-the-replacement');
    expect(call.status, call.text).toBe(200);
    expect(keyOfCall('after-the-replacement')).toEqual([`Bearer ${replacement!.key}`]);
    await expectReconciledAndAudited(v1Env);
  });
});
