import type { Database } from './db.ts';
import type { Env, ServiceName } from './env.ts';
import type { Logger } from './logger.ts';

export interface SessionPrincipal {
  sessionId: string;
  appId: string;
  publicAppId: string;
  developerId: string;
  endUserId: string;
  walletId: string;
  expiresAt: string;
}

export interface DeveloperPrincipal {
  developerId: string;
}

/** Hono generics shared by every worker: typed bindings and per-request variables. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    service: ServiceName;
    requestId: string;
    logger: Logger;
    /** Opens the request's database handle on first use; closed after the response. */
    database: () => Database;
    session: SessionPrincipal;
    developer: DeveloperPrincipal;
  };
}
