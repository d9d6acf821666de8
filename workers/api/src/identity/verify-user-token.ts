/**
 * Verifies a `signed` app's user token (docs/identity.md) with `jose`: a JWT the developer's backend
 * signed, `aud` = the public app ID, `sub` = the end user, `iat`, `nbf` and an `exp` at most ten
 * minutes out. The algorithms follow the app's verifier and nothing in the token: HS256 for app
 * signing secrets, RS256/ES256/EdDSA for a JWKS — so `alg: none` and algorithm confusion (an HS256
 * token "signed" with a public key's text) fail. Every failure is the same 401.
 */
import { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { FaucetError } from '#shared/wire/errors.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { jwksFor } from './jwks-cache.ts';
import type { AppIdentity } from './session-policy.ts';

export const maxUserTokenBytes = 4096;
const maxLifetimeSeconds = 600;
const clockToleranceSeconds = 30;
const secretAlgorithms = ['HS256'];
const jwksAlgorithms = ['RS256', 'ES256', 'EdDSA', 'Ed25519'];

export interface UserTokenVerifier {
  /** The app's current and overlapping HS256 secrets; empty for a JWKS app. */
  secrets: () => Promise<Array<{ id: string; key: Uint8Array }>>;
  fetch: FetchFunction;
}

const refused = (why: string, cause?: unknown) => new FaucetError('unauthorized', `user_token refused: ${why}`, { cause });

/** The verified `sub` of `token`, or a 401 `unauthorized`. */
export async function verifyUserToken(token: string, app: AppIdentity, verifier: UserTokenVerifier): Promise<string> {
  if (token.length > maxUserTokenBytes) throw refused(`longer than ${maxUserTokenBytes} bytes`);
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch (error) {
    throw refused('not a signed JWT', error);
  }
  const payload =
    app.jwksUrl === null
      ? await verifyWithSecrets(token, kid, app, verifier)
      : await verifyWithJwks(token, app.jwksUrl, app, verifier.fetch);
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.exp !== 'number' || payload.exp > now + maxLifetimeSeconds + clockToleranceSeconds) {
    throw refused(`exp must be at most ${maxLifetimeSeconds} seconds away`);
  }
  const subject = payload.sub;
  if (typeof subject !== 'string' || subject.length === 0 || subject.length > 256 || /[\u0000-\u001f\u007f]/.test(subject)) {
    throw refused('sub must be 1–256 characters without control characters');
  }
  return subject;
}

function options(app: AppIdentity, algorithms: string[]) {
  return {
    algorithms,
    audience: app.publicAppId,
    requiredClaims: ['sub', 'exp', 'iat', 'nbf'],
    maxTokenAge: maxLifetimeSeconds,
    clockTolerance: clockToleranceSeconds,
  };
}

async function verifyWithSecrets(
  token: string,
  kid: string | undefined,
  app: AppIdentity,
  verifier: UserTokenVerifier,
): Promise<JWTPayload> {
  const secrets = await verifier.secrets();
  // A kid naming one of the app's secrets picks it; otherwise each verifying secret is tried.
  const named = secrets.filter((secret) => secret.id === kid);
  const candidates = named.length > 0 ? named : secrets;
  if (candidates.length === 0) throw refused('the app has no signing secret');
  let last: unknown;
  for (const secret of candidates) {
    try {
      return (await jwtVerify(token, secret.key, options(app, secretAlgorithms))).payload;
    } catch (error) {
      last = error;
      // Only a wrong signature is worth the next secret; a bad claim fails with any of them.
      if (!(error instanceof errors.JWSSignatureVerificationFailed)) break;
    }
  }
  throw refused(describe(last), last);
}

async function verifyWithJwks(token: string, jwksUrl: string, app: AppIdentity, fetch: FetchFunction): Promise<JWTPayload> {
  const attempt = async (refresh: boolean) => {
    let jwks;
    try {
      jwks = await jwksFor(jwksUrl, fetch, { refresh });
    } catch (error) {
      throw refused("the app's JWKS could not be fetched", error);
    }
    return (await jwtVerify(token, createLocalJWKSet(jwks), options(app, jwksAlgorithms))).payload;
  };
  try {
    try {
      return await attempt(false);
    } catch (error) {
      // A kid the cached set does not know: the developer may have rotated keys since.
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      return await attempt(true);
    }
  } catch (error) {
    throw FaucetError.isInstance(error) ? error : refused(describe(error), error);
  }
}

function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed) return `claim "${error.claim}" is not acceptable`;
  if (error instanceof errors.JOSEAlgNotAllowed) return "its algorithm is not the app's";
  if (error instanceof errors.JWKSNoMatchingKey) return "no key of the app's JWKS matches";
  return 'invalid signature or form';
}
