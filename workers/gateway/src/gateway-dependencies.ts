/**
 * What the gateway reaches outside itself, injectable so tests and the benchmark can intercept
 * upstreams or count database statements, or rate calls with another price catalog (the benchmark
 * compares the full catalog with one of only the models it asks for). Production uses the defaults.
 */
import { createDatabase, type OpenDatabase } from '#shared/db.ts';
import { currentPriceCatalog, type PriceCatalog } from '#shared/rating/index.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

export interface GatewayDependencies {
  upstreamFetch: FetchFunction;
  openDatabase: OpenDatabase;
  /** The catalog a call's hold bounds, output caps and rating read (the models list always shows the current one). */
  priceCatalog: PriceCatalog;
}

export const defaultGatewayDependencies: GatewayDependencies = {
  upstreamFetch: (request) => fetch(request),
  openDatabase: createDatabase,
  priceCatalog: currentPriceCatalog,
};
