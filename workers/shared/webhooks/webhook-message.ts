/**
 * The webhooks queue's messages (docs/webhooks.md): `relay` wakes the relay (a transaction wrote
 * events: it turns them into deliveries and queues each), `deliver` sends one delivery. Ids only: the
 * consumer reads the delivery, its event and its endpoint, so what is sent is what the database says.
 */
import { isUuid } from '../query.ts';

export type WebhookMessage =
  | { kind: 'relay'; databaseUrl?: string }
  | {
      kind: 'deliver';
      deliveryId: string;
      /** Tests only (ENVIRONMENT=test, no DATABASE_URL): the per-file database. */
      databaseUrl?: string;
    };

/** A message as the consumer trusts it: a known kind, a uuid; anything else is null (dropped). */
export function parseWebhookMessage(body: unknown): WebhookMessage | null {
  if (typeof body !== 'object' || body === null) return null;
  const { kind, deliveryId, databaseUrl } = body as Record<string, unknown>;
  const database = typeof databaseUrl === 'string' ? { databaseUrl } : {};
  if (kind === 'relay') return { kind, ...database };
  if (kind === 'deliver' && typeof deliveryId === 'string' && isUuid(deliveryId)) return { kind, deliveryId, ...database };
  return null;
}
