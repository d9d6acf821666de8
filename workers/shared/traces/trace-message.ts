/**
 * What a wallet object tells the traces queue after a flush (docs/traces.md): per app with an enabled
 * export, the ids of the calls whose request-log rows the flush wrote. Ids only: the consumer reads
 * the rows and their usage records, so a span always says what the database says.
 */
import { isUuid } from '../query.ts';

export interface TraceMessage {
  appId: string;
  callIds: string[];
  /** Tests only (ENVIRONMENT=test, no DATABASE_URL): the per-file database the flush wrote to. */
  databaseUrl?: string;
}

/** One message per traced app of a flush's request-log rows. */
export function traceMessages(
  logs: readonly { id: string; app_id: string }[],
  tracedApps: readonly string[],
  databaseUrl?: string | null,
): TraceMessage[] {
  const traced = new Set(tracedApps);
  const byApp = new Map<string, string[]>();
  for (const row of logs) {
    if (!traced.has(row.app_id)) continue;
    const ids = byApp.get(row.app_id) ?? [];
    ids.push(row.id);
    byApp.set(row.app_id, ids);
  }
  return [...byApp].map(([appId, callIds]) => ({ appId, callIds, ...(databaseUrl ? { databaseUrl } : {}) }));
}

/** A message as the consumer trusts it: known shape, uuids only; anything else is null (dropped). */
export function parseTraceMessage(body: unknown): TraceMessage | null {
  if (typeof body !== 'object' || body === null) return null;
  const { appId, callIds, databaseUrl } = body as Record<string, unknown>;
  if (typeof appId !== 'string' || !isUuid(appId) || !Array.isArray(callIds) || callIds.length === 0) return null;
  if (!callIds.every((id): id is string => typeof id === 'string' && isUuid(id))) return null;
  return { appId, callIds, ...(typeof databaseUrl === 'string' ? { databaseUrl } : {}) };
}
