import type { UsageReport } from '../types.ts';

export interface LocalCallFacts {
  requestId: string;
  publicAppId: string;
  /** The session's `user_ref` (SessionManager.userRef): only the server can link it to a user. */
  userRef: string;
  feature?: string;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  estimated: boolean;
  occurredAt: Date;
}

/**
 * The report of one local call. It is built field by field from counts and identifiers, so no
 * prompt or answer text can ride along; the user is named only by the server's opaque `user_ref`.
 */
export async function buildUsageReport(facts: LocalCallFacts): Promise<UsageReport> {
  const report: UsageReport = {
    request_id: facts.requestId,
    public_app_id: facts.publicAppId,
    user_id_hash: facts.userRef,
    route_mode: 'local',
    provider: facts.provider,
    model: facts.model,
    input_tokens: facts.inputTokens,
    output_tokens: facts.outputTokens,
    estimated: facts.estimated,
    occurred_at: facts.occurredAt.toISOString(),
  };
  if (facts.feature !== undefined) report.feature = facts.feature;
  return report;
}
