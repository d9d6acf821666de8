/**
 * What vouches for the end user of a new session (docs/identity.md), decided before anything is
 * written: the app developer's `fdk_` key (any policy: the developer's backend may always mint), a
 * user token the developer signed (`signed`), or a random device id (`anonymous`). Returns the
 * stored form of the end user's identity; every refusal is a 401 or 403 (400 for a named user id in
 * the devices' reserved namespace).
 */
import type { Db } from '#shared/db.ts';
import { findDeveloperByKey } from '#shared/developers/find-developer-by-key.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { deviceUserHash, isReservedUserId, namedUserHash } from './end-user-hash.ts';
import type { AppIdentity } from './session-policy.ts';
import { verifyUserToken, type UserTokenVerifier } from './verify-user-token.ts';

export interface SessionRequest {
  authorization: string | undefined;
  externalUserId: string | undefined;
  userToken: string | undefined;
  deviceId: string | undefined;
}

/** `end_users.external_user_hash` of the proven user; for a device also the hash it may still be stored under. */
export interface ProvenUser {
  hash: string;
  formerHash: string | null;
}

export async function provenUser(
  request: SessionRequest,
  app: AppIdentity,
  context: { db: Db; hashSecret: string; verifier: UserTokenVerifier },
): Promise<ProvenUser> {
  const named = async (externalUserId: string) => ({ hash: await namedUserHash(context.hashSecret, externalUserId), formerHash: null });
  if (request.authorization !== undefined) {
    await requireAppDeveloper(request.authorization, app, context.db);
    if (request.externalUserId === undefined) throw new FaucetError('invalid_request', 'external_user_id is required');
    return named(request.externalUserId);
  }
  switch (app.sessionPolicy) {
    case 'server':
      throw new FaucetError(
        'unauthorized',
        "This app's sessions are created by its backend: send Authorization: Bearer fdk_… of the app's developer",
      );
    case 'signed': {
      if (request.userToken === undefined) throw new FaucetError('unauthorized', 'This app needs a user_token signed by its developer');
      const subject = await verifyUserToken(request.userToken, app, context.verifier);
      if (request.externalUserId !== undefined && request.externalUserId !== subject) {
        throw new FaucetError('unauthorized', 'user_token refused: its sub is not external_user_id');
      }
      if (isReservedUserId(subject)) throw new FaucetError('unauthorized', 'user_token refused: its sub is reserved for device identities');
      return named(subject);
    }
    case 'anonymous': {
      if (request.externalUserId !== undefined || request.userToken !== undefined) {
        throw new FaucetError(
          'forbidden',
          "This app's sessions are anonymous: send device_id only (naming a user needs the developer's key)",
        );
      }
      if (request.deviceId === undefined) throw new FaucetError('unauthorized', "This app's sessions need a device_id");
      // Its own domain: no external user id of the app, however spelled, hashes to a device.
      return deviceUserHash(context.hashSecret, request.deviceId);
    }
  }
}

async function requireAppDeveloper(authorization: string, app: AppIdentity, db: Db): Promise<void> {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  const found = token === undefined ? undefined : await findDeveloperByKey(db, token);
  if (!found) throw new FaucetError('unauthorized', 'Invalid developer key');
  if (found.developerId !== app.developerId) throw new FaucetError('forbidden', 'This developer key does not own the app');
}
