/**
 * A device identity never becomes a named user (docs/identity.md, "Devices and named users"): the
 * attacker spells a device's identity as a named user — with the developer key, or as the `sub` of a
 * token the developer signed — and must get neither the device's end user nor its wallet, also for a
 * device stored before device identities had a domain of their own (whose row keeps its wallet).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { hashExternalUserId } from '#shared/crypto.ts';
import { api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';
import {
  askForSession,
  createDeveloperApp,
  sessionRowCounts,
  signHs256,
  userTokenClaims,
  type TestApp,
} from '../../../test/identity-kit.ts';
import { fund, wallet } from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const newDeviceId = () => crypto.randomUUID().replace(/-/g, '');

interface Minted {
  session_token: string;
  user_ref: string;
}

/** A device of an anonymous app with a session and 5 USD in its wallet. */
async function fundedDevice(app: TestApp) {
  const deviceId = newDeviceId();
  const response = await askForSession(testEnv, { public_app_id: app.publicAppId, device_id: deviceId });
  expect(response.status).toBe(201);
  const session = (await response.json()) as Minted;
  const walletId = await walletOfUserRef(app, session.user_ref);
  await fund(testEnv, walletId, '5.00000000');
  return { deviceId, userRef: session.user_ref, walletId };
}

async function walletOfUserRef(app: TestApp, ref: string): Promise<string> {
  const [row] = await sql<{ id: string }>(
    testEnv,
    `select w.id from wallets w join end_users u on u.id = w.end_user_id
      where u.app_id = $1 and encode(hmac('user-ref:' || u.id::text, $2::text, 'sha256'), 'hex') = $3`,
    [app.appId, testEnv.SESSION_HASH_SECRET, ref],
  );
  return row!.id;
}

/** The attack must not hand out the device: never its user_ref, and a refusal that writes nothing. */
async function expectNotTheDevice(response: Response, device: { userRef: string; walletId: string }, status: 400 | 401) {
  const text = await response.text();
  expect(text).not.toContain(device.userRef);
  expect(response.status, text).toBe(status);
  expect(await wallet(testEnv, device.walletId)).toMatchObject({ balance: '5.00000000' });
}

describe('a named user spelled like a device identity', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createDeveloperApp(testEnv, { policy: 'anonymous' });
  });

  it("with the developer key: refused, never the device's user_ref or wallet", async () => {
    const device = await fundedDevice(app);
    const before = await sessionRowCounts(testEnv);
    const response = await askForSession(
      testEnv,
      { public_app_id: app.publicAppId, external_user_id: `anonymous-device:${device.deviceId}` },
      { token: app.developerKey },
    );
    await expectNotTheDevice(response, device, 400);
    expect(await sessionRowCounts(testEnv)).toEqual(before);
  });

  it("as a signed user token's sub (the app switched from anonymous to signed): refused", async () => {
    const switching = await createDeveloperApp(testEnv, { policy: 'anonymous' });
    const device = await fundedDevice(switching);
    const secret = await call(api(), testEnv, `/v1/developer/apps/${switching.publicAppId}/signing-secrets`, {
      json: {},
      token: switching.developerKey,
    });
    const { signing_secret: signingSecret } = (await secret.json()) as { signing_secret: string };
    const policy = await call(api(), testEnv, `/v1/developer/apps/${switching.publicAppId}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'signed' },
      token: switching.developerKey,
    });
    expect(policy.status).toBe(200);
    const userToken = await signHs256(signingSecret, userTokenClaims(switching.publicAppId, `anonymous-device:${device.deviceId}`));
    const response = await askForSession(testEnv, { public_app_id: switching.publicAppId, user_token: userToken });
    await expectNotTheDevice(response, device, 401);
  });

  it("cannot revoke a device's sessions by spelling it as an external_user_id", async () => {
    const device = await fundedDevice(app);
    const response = await call(api(), testEnv, `/v1/developer/apps/${app.publicAppId}/users/revoke-sessions`, {
      json: { external_user_id: `anonymous-device:${device.deviceId}` },
      token: app.developerKey,
    });
    expect(response.status).toBe(400);
    const [live] = await sql<{ count: number }>(
      testEnv,
      `select count(*)::int as count from virtual_sessions s join wallets w on w.end_user_id = s.end_user_id
        where w.id = $1 and s.revoked_at is null`,
      [device.walletId],
    );
    expect(live!.count).toBe(1);
  });
});

describe('a device stored under the hash of the plain string anonymous-device:<id>', () => {
  let app: TestApp;
  let deviceId: string;
  let stored: { end_user_id: string; wallet_id: string };
  const formerHash = () => hashExternalUserId(testEnv.SESSION_HASH_SECRET!, `anonymous-device:${deviceId}`);
  beforeAll(async () => {
    app = await createDeveloperApp(testEnv, { policy: 'anonymous' });
    deviceId = newDeviceId();
    const [row] = await sql<{ end_user_id: string; wallet_id: string }>(
      testEnv,
      `with u as (insert into end_users (app_id, external_user_hash) values ($1, $2) returning id)
       insert into wallets (kind, end_user_id) select 'user', id from u returning end_user_id, id as wallet_id`,
      [app.appId, await formerHash()],
    );
    stored = row!;
    await fund(testEnv, stored.wallet_id, '5.00000000');
  });

  it('is unreachable by name before the device returns', async () => {
    const [ref] = await sql<{ user_ref: string }>(
      testEnv,
      `select encode(hmac('user-ref:' || $1::text, $2::text, 'sha256'), 'hex') as user_ref`,
      [stored.end_user_id, testEnv.SESSION_HASH_SECRET],
    );
    const device = { userRef: ref!.user_ref, walletId: stored.wallet_id };
    const response = await askForSession(
      testEnv,
      { public_app_id: app.publicAppId, external_user_id: `anonymous-device:${deviceId}` },
      { token: app.developerKey },
    );
    await expectNotTheDevice(response, device, 400);
    const [row] = await sql<{ external_user_hash: string }>(testEnv, 'select external_user_hash from end_users where id = $1', [
      stored.end_user_id,
    ]);
    expect(row!.external_user_hash).toBe(await formerHash());
  });

  it('keeps its end user and wallet when the device returns, moved into the device domain for good', async () => {
    const first = await askForSession(testEnv, { public_app_id: app.publicAppId, device_id: deviceId });
    expect(first.status).toBe(201);
    const session = (await first.json()) as Minted;
    expect(await walletOfUserRef(app, session.user_ref)).toBe(stored.wallet_id);
    const [row] = await sql<{ external_user_hash: string }>(testEnv, 'select external_user_hash from end_users where id = $1', [
      stored.end_user_id,
    ]);
    expect(row!.external_user_hash).not.toBe(await formerHash());

    const again = (await (await askForSession(testEnv, { public_app_id: app.publicAppId, device_id: deviceId })).json()) as Minted;
    expect(again.user_ref).toBe(session.user_ref);
    const [counts] = await sql<{ users: number }>(testEnv, 'select count(*)::int as users from end_users where app_id = $1', [app.appId]);
    expect(counts!.users).toBe(1);
    expect(await wallet(testEnv, stored.wallet_id)).toMatchObject({ balance: '5.00000000' });
  });

  it('keeps one end user when its first sessions after the change race', async () => {
    const racing = newDeviceId();
    const [row] = await sql<{ id: string }>(
      testEnv,
      `with u as (insert into end_users (app_id, external_user_hash) values ($1, $2) returning id)
       insert into wallets (kind, end_user_id) select 'user', id from u returning end_user_id as id`,
      [app.appId, await hashExternalUserId(testEnv.SESSION_HASH_SECRET!, `anonymous-device:${racing}`)],
    );
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => askForSession(testEnv, { public_app_id: app.publicAppId, device_id: racing })),
    );
    const refs = new Set<string>();
    for (const answer of answers) {
      expect(answer.status).toBe(201);
      refs.add(((await answer.json()) as Minted).user_ref);
    }
    expect(refs.size).toBe(1);
    const [owner] = await sql<{ ok: boolean }>(
      testEnv,
      `select encode(hmac('user-ref:' || $1::text, $2::text, 'sha256'), 'hex') = $3 as ok`,
      [row!.id, testEnv.SESSION_HASH_SECRET, [...refs][0]],
    );
    expect(owner!.ok).toBe(true);
  });
});
