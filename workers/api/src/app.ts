import { createServiceApp, type ServiceApp } from '#shared/app.ts';
import { workerVersions } from '#shared/release.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { registerAdminDeveloperRoutes } from './routes/admin-developers.ts';
import { registerAdminProviderKeyRoutes } from './routes/admin-provider-keys.ts';
import { registerAuditLogRoutes } from './routes/audit-log.ts';
import { registerDeveloperAppAlertRoutes } from './routes/developer-app-alerts.ts';
import { registerDeveloperAppIdentityRoutes } from './routes/developer-app-identity.ts';
import { registerDeveloperAppRoutes } from './routes/developer-apps.ts';
import { registerDeveloperCallRoutes } from './routes/developer-calls.ts';
import { registerDeveloperExportRoutes } from './routes/developer-exports.ts';
import { registerDeveloperFeatureRoutes } from './routes/developer-features.ts';
import { registerDeveloperKeyRoutes } from './routes/developer-keys.ts';
import { registerDeveloperTracesRoutes } from './routes/developer-traces.ts';
import { registerDeveloperWebhookRoutes } from './routes/developer-webhooks.ts';
import { registerDeveloperMoneyRoutes } from './routes/developer-money.ts';
import { registerDeveloperProviderKeyRoutes } from './routes/developer-provider-keys.ts';
import { registerDeveloperUsageRoutes } from './routes/developer-usage.ts';
import { registerMoneyRoutes } from './routes/money.ts';
import { registerPaymentRoutes } from './routes/payments.ts';
import { registerDeveloperSessionRoutes } from './routes/developer-sessions.ts';
import { registerSessionRoutes } from './routes/sessions.ts';
import { registerUserProviderKeyRoutes } from './routes/user-provider-keys.ts';
import { relayAfterMoneyChanges } from './webhook-relay.ts';

/**
 * The control API: sessions, wallets, provider keys, payments, admin and reports. `fetch` is what
 * fetches developers' JWKS (through the guarded outbound fetch); tests pass their own.
 */
export function createApiApp(dependencies: { fetch?: FetchFunction } = {}): ServiceApp {
  const app = createServiceApp({
    service: 'api',
    title: 'Faucet control API',
    version: workerVersions.api,
    rateLimit: {
      maxRequestsSetting: 'API_RATE_LIMIT_MAX_REQUESTS',
      windowMsSetting: 'API_RATE_LIMIT_WINDOW_MS',
      defaultMaxRequests: 1200,
      defaultWindowMs: 60_000,
    },
    defaultMaxBodyBytes: 256 * 1024,
  });
  app.use('*', relayAfterMoneyChanges());
  registerSessionRoutes(app, { fetch: dependencies.fetch });
  registerDeveloperAppRoutes(app);
  registerDeveloperFeatureRoutes(app);
  registerDeveloperAppIdentityRoutes(app);
  registerDeveloperTracesRoutes(app);
  registerDeveloperWebhookRoutes(app);
  registerDeveloperAppAlertRoutes(app);
  registerDeveloperSessionRoutes(app);
  registerMoneyRoutes(app);
  registerPaymentRoutes(app);
  registerUserProviderKeyRoutes(app);
  registerDeveloperProviderKeyRoutes(app);
  registerAdminProviderKeyRoutes(app);
  registerAdminDeveloperRoutes(app);
  registerDeveloperKeyRoutes(app);
  registerDeveloperMoneyRoutes(app);
  registerDeveloperExportRoutes(app);
  registerDeveloperUsageRoutes(app);
  registerDeveloperCallRoutes(app);
  registerAuditLogRoutes(app);
  return app;
}
