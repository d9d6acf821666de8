/**
 * Wire shapes of the webhooks endpoints the Webhooks view reads (docs/webhooks.md; the API's OpenAPI
 * is the source), the overlap choices of a secret rotation, and the page size of the delivery log.
 */
export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string | null;
  /** Event types, or `['*']` for every type. */
  event_types: string[];
  enabled: boolean;
  /** `whsec_…` and the secret's last four characters. */
  secret_hint: string;
  /** During a rotation's overlap: the previous secret signs until then. */
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** An endpoint as created or rotated: with its signing secret, shown this once. */
export interface WebhookEndpointWithSecret extends WebhookEndpoint {
  secret: string;
}

export const deliveryStatuses = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];

export interface WebhookDelivery {
  id: string;
  endpoint_id: string;
  event: { id: string; type: string; created_at: string };
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  /** The endpoint's last HTTP status (null: no answer). */
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
}

export interface WebhookAttempt {
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

export interface WebhookDeliveryDetail extends WebhookDelivery {
  /** The body sent: `{ id, type, created_at, data }`. */
  payload: { id: string; type: string; created_at: string; data: Record<string, unknown> };
  attempt_log: WebhookAttempt[];
}

export interface AppAlerts {
  public_app_id: string;
  low_balance_threshold_usd: string | null;
}

/** How long the previous secret keeps signing after a rotation (the API's default is a day). */
export const overlapChoices = [
  { seconds: 0, label: 'None: the previous secret stops now' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 86_400, label: '24 hours' },
] as const;

/** Deliveries per page of the log ("More deliveries" asks for the next). */
export const deliveryPageSize = 10;

export const endpointPath = (id: string) => `/v1/developer/webhooks/${encodeURIComponent(id)}`;

/** An ISO instant as the console shows it: to the second, in UTC. */
export const utcTime = (instant: string | null) => (instant ? `${instant.slice(0, 19).replace('T', ' ')} UTC` : '—');

/** The event types of an endpoint in words: `*` is every type, present and future. */
export const eventTypesText = (types: string[]) => (types.includes('*') ? 'All events' : types.join(', '));
