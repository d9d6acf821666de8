/** What the app and feature services need of a database: a pg-style query (a Neon pool, or the seed's pg client). */
export interface Queryable {
  query(text: string, params: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** Who changed something, for the audit row written in the same statement as the change. */
export interface AuditActor {
  type: 'developer' | 'admin' | 'system';
  id: string | null;
  requestId: string;
}
