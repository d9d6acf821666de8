/**
 * The impersonation scenario against the running stack: with only an app's public id (which
 * ships in every browser bundle), ask for a session as another end user. A `server` app (the demo
 * app) and a `signed` app (created here, so the demo app stays `server`) must refuse every way of
 * asking without proof, and write nothing; the victim's own proof still works.
 */
import { SignJWT } from 'jose';
import pg from 'pg';
import { testSecrets } from '../setup/test-secrets.ts';
import { type AttackTarget, newAttacker } from './attacker-kit.ts';

export interface ImpersonationAttempt {
  label: string;
  status: number;
  code: string | undefined;
}

async function askForSession(
  target: AttackTarget,
  body: Record<string, unknown>,
  authorization?: string,
): Promise<{ status: number; code: string | undefined }> {
  const response = await fetch(`${target.apiUrl}/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });
  const answer = (await response.json().catch(() => ({}))) as { error?: { code?: string } };
  return { status: response.status, code: answer.error?.code };
}

async function sessionCount(target: AttackTarget): Promise<number> {
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: number }>('select count(*)::int as count from virtual_sessions');
    return rows[0]!.count;
  } finally {
    await client.end();
  }
}

/** A second app of the demo developer under the `signed` policy, and its HS256 signing secret. */
async function signedApp(target: AttackTarget): Promise<{ publicAppId: string; secret: string }> {
  const publicAppId = `app_signed_adv_${crypto.randomUUID().slice(0, 8)}`;
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect();
  try {
    await client.query(
      `with app as (insert into apps (developer_id, public_app_id, name) select developer_id, $2, 'Signed (adversarial)' from apps where public_app_id = $1 returning id)
       insert into app_features (app_id, feature_key, name, default_model) select id, $3, 'Chat', 'mock:echo' from app`,
      [target.publicAppId, publicAppId, target.featureKey],
    );
  } finally {
    await client.end();
  }
  const developer = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${target.apiUrl}/v1/developer/apps/${publicAppId}${path}`, {
      method,
      headers: { authorization: `Bearer ${testSecrets.DEMO_DEVELOPER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status}`);
    return (await response.json()) as Record<string, unknown>;
  };
  const secret = (await developer('POST', '/signing-secrets', {})).signing_secret as string;
  await developer('PATCH', '/session-policy', { session_policy: 'signed' });
  return { publicAppId, secret };
}

const sign = (secret: string, subject: string, audience: string) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(subject)
    .setAudience(audience)
    .setIssuedAt()
    .setNotBefore('0s')
    .setExpirationTime('2m')
    .sign(new TextEncoder().encode(secret));

const unsigned = (subject: string, audience: string) => {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: subject, aud: audience, iat: now, nbf: now, exp: now + 60 })}.`;
};

/** Every way of asking as the victim without the app's proof; then the victim's own valid proof. */
export async function impersonate(
  target: AttackTarget,
): Promise<{ attempts: ImpersonationAttempt[]; sessionsWritten: number; validProofWorks: boolean }> {
  const victim = await newAttacker(target, 'impersonated', '1.00000000');
  const signed = await signedApp(target);
  const before = await sessionCount(target);
  const attempts: ImpersonationAttempt[] = [];
  const attempt = async (label: string, body: Record<string, unknown>, authorization?: string) => {
    attempts.push({ label, ...(await askForSession(target, body, authorization)) });
  };
  const asVictim = { public_app_id: target.publicAppId, external_user_id: victim.externalUserId };
  await attempt('server app, public app id only', asVictim);
  await attempt('server app, a made-up developer key', asVictim, `Bearer fdk_${'x'.repeat(43)}`);
  await attempt('server app, the victim session token as a developer key', asVictim, `Bearer ${victim.token}`);
  const signedVictim = { public_app_id: signed.publicAppId, external_user_id: victim.externalUserId };
  await attempt('signed app, public app id only', signedVictim);
  await attempt('signed app, token signed with a guessed secret', {
    ...signedVictim,
    user_token: await sign('guessed-secret-guessed-secret-00', victim.externalUserId, signed.publicAppId),
  });
  await attempt('signed app, alg none', { ...signedVictim, user_token: unsigned(victim.externalUserId, signed.publicAppId) });
  await attempt('signed app, a valid token for another app', {
    ...signedVictim,
    user_token: await sign(signed.secret, victim.externalUserId, target.publicAppId),
  });
  await attempt('signed app, a valid token of the attacker naming the victim in the body', {
    ...signedVictim,
    user_token: await sign(signed.secret, 'the-attacker', signed.publicAppId),
  });
  const sessionsWritten = (await sessionCount(target)) - before;
  const valid = await askForSession(target, {
    public_app_id: signed.publicAppId,
    user_token: await sign(signed.secret, victim.externalUserId, signed.publicAppId),
  });
  return { attempts, sessionsWritten, validProofWorks: valid.status === 201 };
}
