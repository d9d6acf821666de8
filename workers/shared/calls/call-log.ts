/**
 * The request log's row (`gateway_call_log`, migration 0030; docs/request-log.md). The gateway knows
 * how a call went (its surface, outcome, timings, attempts, error); the wallet object knows whose it
 * was (its call record). The gateway hands its part over with the settlement or the abandonment it
 * sends the object anyway, and the object's flush writes the row beside the bookings: no statement
 * on the call's path. Never any content of the call.
 */
import type { CallAttempt } from '../wire/faucet-object.ts';
import { FaucetError } from '../wire/errors.ts';

export const callSurfaces = ['chat.completions', 'responses', 'messages', 'embeddings'] as const;
export type CallSurface = (typeof callSurfaces)[number];

export const callOutcomes = ['answered', 'cut', 'upstream_error', 'refused'] as const;
export type CallOutcome = (typeof callOutcomes)[number];

/** What the gateway tells of a call: how it went, never what was said. */
export interface CallLogFacts {
  surface: CallSurface;
  /** The model the client named (`provider:model`, a bare name or an alias). */
  requestedModel: string;
  outcome: CallOutcome;
  errorCode?: string | null;
  errorMessage?: string | null;
  stream: boolean;
  authorizeMs?: number | null;
  firstByteMs?: number | null;
  totalMs?: number | null;
  attempts?: CallAttempt[] | null;
  /** The model that answered (or was last tried), when it differs from the call record's (a fallback). */
  provider?: string | null;
  model?: string | null;
}

/** A `gateway_call_log` row as the flush statement takes it (jsonb_populate_recordset: the columns by their names). */
export interface CallLogRow {
  id: string;
  app_id: string;
  end_user_id: string;
  feature_key: string;
  surface: CallSurface;
  requested_model: string;
  provider: string | null;
  model: string | null;
  route_mode: string | null;
  outcome: CallOutcome;
  error_code: string | null;
  error_message: string | null;
  client_request_id: string;
  stream: boolean;
  authorize_ms: number | null;
  first_byte_ms: number | null;
  total_ms: number | null;
  attempts: CallAttempt[] | null;
  provider_credential_id: string | null;
  created_at: string;
}

/** Whose call it was, as the object's call record (or the refusal's context) says. */
export interface CallOwner {
  id: string;
  appId: string;
  endUserId: string;
  featureKey: string;
  clientRequestId: string;
  provider: string | null;
  model: string | null;
  routeMode: string | null;
  providerCredentialId: string | null;
  createdAt: string;
}

const longestMessage = 500;
const whole = (value: number | null | undefined) => (value == null || !Number.isFinite(value) ? null : Math.max(0, Math.round(value)));

/** The row of a call: the gateway's facts on the object's record. An error message is cut to 500 characters. */
export function callLogRow(owner: CallOwner, facts: CallLogFacts): CallLogRow {
  return {
    id: owner.id,
    app_id: owner.appId,
    end_user_id: owner.endUserId,
    feature_key: owner.featureKey,
    surface: facts.surface,
    requested_model: facts.requestedModel.slice(0, 300),
    provider: facts.provider ?? owner.provider,
    model: facts.model ?? owner.model,
    route_mode: owner.routeMode,
    outcome: facts.outcome,
    error_code: facts.errorCode ?? null,
    error_message: facts.errorMessage == null ? null : facts.errorMessage.slice(0, longestMessage),
    client_request_id: owner.clientRequestId,
    stream: facts.stream,
    authorize_ms: whole(facts.authorizeMs),
    first_byte_ms: whole(facts.firstByteMs),
    total_ms: whole(facts.totalMs),
    attempts: facts.attempts ?? null,
    provider_credential_id: owner.providerCredentialId,
    created_at: owner.createdAt,
  };
}

/** A failure as the log names it: its code and message (a failure not Faucet's own as `internal_error`); none when there is none. */
export function failureFacts(failure: unknown): Pick<CallLogFacts, 'errorCode' | 'errorMessage'> {
  if (failure === undefined) return { errorCode: null, errorMessage: null };
  if (FaucetError.isInstance(failure)) return { errorCode: failure.code, errorMessage: failure.message };
  return { errorCode: 'internal_error', errorMessage: 'The gateway failed while serving the call.' };
}
