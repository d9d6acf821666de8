/**
 * What the gateway reaches outside itself, injectable so tests and the benchmark can intercept
 * upstreams or count database round trips.
 */
import type { SQL } from 'drizzle-orm';
import { createDatabase } from '../../shared/db.ts';
import type { Env } from '../../shared/env.ts';
import type { LedgerDatabase } from '../../shared/ledger/database.ts';
import type { FetchFunction } from '../../shared/upstream/outbound-fetch.ts';

/** The request's own database handle; streams keep it past the handler's return, so it is closed explicitly. */
export interface GatewayDatabase extends LedgerDatabase {
  close(): Promise<void>;
}

export interface GatewayDependencies {
  upstreamFetch: FetchFunction;
  openDatabase(env: Env): GatewayDatabase;
}

export function openGatewayDatabase(env: Env): GatewayDatabase {
  const { db, pool } = createDatabase(env);
  return {
    execute: (query: SQL) => db.execute(query),
    close: () => pool.end().catch(() => undefined),
  };
}

export const defaultGatewayDependencies: GatewayDependencies = {
  upstreamFetch: (request) => fetch(request),
  openDatabase: openGatewayDatabase,
};
