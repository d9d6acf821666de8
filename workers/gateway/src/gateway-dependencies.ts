/**
 * What the gateway reaches outside itself, injectable so tests and the benchmark can intercept
 * upstreams or count database statements.
 */
import { createDatabase, type OpenDatabase } from '#shared/db.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

export interface GatewayDependencies {
  upstreamFetch: FetchFunction;
  openDatabase: OpenDatabase;
}

export const defaultGatewayDependencies: GatewayDependencies = {
  upstreamFetch: (request) => fetch(request),
  openDatabase: createDatabase,
};
