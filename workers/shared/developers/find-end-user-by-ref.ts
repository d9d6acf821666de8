/**
 * Finds one of a developer's end users by the `user_ref` that `GET /v1/developer/end-users` lists
 * (and `POST /v1/sessions` returns). A user_ref is an HMAC of the end user's row id
 * (`auth/user-ref.ts`) and cannot be reversed, so the statement computes it with pgcrypto's
 * `hmac` over the developer's own end users only (a materialised set: never anyone else's rows)
 * and keeps the one that matches. The cost grows with the developer's end users; it serves rare
 * actions (revoking a user's sessions), not a request path. The secret is a bind parameter, never
 * statement text.
 */
import { sql } from 'drizzle-orm';
import { userRefPrefix } from '../auth/user-ref.ts';
import { queryRows, type SqlDatabase } from '../query.ts';
import { FaucetError } from '../wire/errors.ts';

/** A user_ref as the API gives it: 64 lowercase hex characters. */
export const USER_REF_PATTERN = /^[0-9a-f]{64}$/;

/** The end user and their app; no table row has this shape (a join). */
export interface OwnedEndUserRow {
  end_user_id: string;
  app_id: string;
}

/** The developer's end user named by `ref`, or undefined (unknown, or another developer's). */
export async function findEndUserByRef(
  db: SqlDatabase,
  input: { secret: string | undefined; developerId: string; ref: string },
): Promise<OwnedEndUserRow | undefined> {
  if (!input.secret) throw new FaucetError('internal_error', 'SESSION_HASH_SECRET is not configured');
  if (!USER_REF_PATTERN.test(input.ref)) throw new FaucetError('invalid_request', 'user_ref must be 64 lowercase hex characters');
  const [row] = await queryRows<OwnedEndUserRow>(
    db,
    sql`with mine as materialized (
          select u.id, u.app_id from end_users u join apps a on a.id = u.app_id
           where a.developer_id = ${input.developerId}::uuid)
        select id as end_user_id, app_id from mine
         where encode(hmac(${userRefPrefix}::text || id::text, ${input.secret}::text, 'sha256'), 'hex') = ${input.ref}
         limit 1`,
  );
  return row;
}
