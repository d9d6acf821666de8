import type { RequestDatabase } from './db.ts';
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
  /** The web origins the session's app allows (CORS answers them only). */
  allowedOrigins: readonly string[];
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
    /** Opens the request's database handle on first use; ended after the response and every `retain()`. */
    database: () => RequestDatabase;
    session: SessionPrincipal;
    developer: DeveloperPrincipal;
    /** The web origins of the app a request turned out to concern, for the CORS answer (middleware/app-cors.ts). */
    appOrigins: readonly string[] | undefined;
  };
}
