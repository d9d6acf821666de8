/**
 * What vouches for the end user of a new session (docs/identity.md), decided before anything is
 * written: the app developer's `fdk_` key (any policy: the developer's backend may always mint), a
 * user token the developer signed (`signed`), or a random device id (`anonymous`). Returns the
 * stored form of the end user's identity; every refusal is a 401 or 403.
 */
import { hashExternalUserId } from '#shared/crypto.ts';
import type { Db } from '#shared/db.ts';
import { findDeveloperByKey } from '#shared/developers/find-developer-by-key.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { AppIdentity } from './session-policy.ts';
import { verifyUserToken, type UserTokenVerifier } from './verify-user-token.ts';

export interface SessionRequest {
  authorization: string | undefined;
  externalUserId: string | undefined;
  userToken: string | undefined;
  deviceId: string | undefined;
}

export async function provenUserHash(
  request: SessionRequest,
  app: AppIdentity,
  context: { db: Db; hashSecret: string; verifier: UserTokenVerifier },
): Promise<string> {
  if (request.authorization !== undefined) {
    await requireAppDeveloper(request.authorization, app, context.db);
    if (request.externalUserId === undefined) throw new FaucetError('invalid_request', 'external_user_id is required');
    return hashExternalUserId(context.hashSecret, request.externalUserId);
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
      return hashExternalUserId(context.hashSecret, subject);
    }
    case 'anonymous': {
      if (request.externalUserId !== undefined || request.userToken !== undefined) {
        throw new FaucetError(
          'forbidden',
          "This app's sessions are anonymous: send device_id only (naming a user needs the developer's key)",
        );
      }
      if (request.deviceId === undefined) throw new FaucetError('unauthorized', "This app's sessions need a device_id");
      // Its own namespace: a device id can never collide with an external user id of the same app.
      return hashExternalUserId(context.hashSecret, `anonymous-device:${request.deviceId}`);
    }
  }
}

async function requireAppDeveloper(authorization: string, app: AppIdentity, db: Db): Promise<void> {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  const found = token === undefined ? undefined : await findDeveloperByKey(db, token);
  if (!found) throw new FaucetError('unauthorized', 'Invalid developer key');
  if (found.developerId !== app.developerId) throw new FaucetError('forbidden', 'This developer key does not own the app');
}
