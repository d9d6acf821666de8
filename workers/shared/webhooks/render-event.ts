/**
 * An event as its endpoint receives it (docs/webhooks.md): `{ id, type, created_at, data }`. The
 * outbox keeps internal ids; here an app becomes its `public_app_id` and an end user the `user_ref`
 * the developer already knows from sessions and the request log — never a raw id.
 */
import { userRef } from '../auth/user-ref.ts';
import type { Env } from '../env.ts';

export interface StoredEvent {
  id: string;
  type: string;
  /** ISO 8601. */
  created_at: string;
  data: Record<string, unknown>;
  /** The public id of `data.app_id`, looked up with the event (null: none named). */
  public_app_id: string | null;
}

export interface RenderedEvent {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

export async function renderEvent(env: Env, event: StoredEvent): Promise<RenderedEvent> {
  const { app_id: appId, end_user_id: endUserId, ...rest } = event.data;
  const data: Record<string, unknown> = {};
  if (appId !== undefined) data.public_app_id = event.public_app_id;
  if (typeof endUserId === 'string') data.user_ref = await userRef(env.SESSION_HASH_SECRET, endUserId);
  Object.assign(data, rest);
  return { id: event.id, type: event.type, created_at: event.created_at, data };
}
