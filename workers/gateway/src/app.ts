import { createServiceApp, type ServiceApp } from '#shared/app.ts';
import { workerVersions } from '#shared/release.ts';
import { defaultGatewayDependencies, type GatewayDependencies } from './gateway-dependencies.ts';
import { registerChatCompletions } from './routes/chat-completions.ts';
import { registerEmbeddings } from './routes/embeddings.ts';
import { registerMessages } from './routes/messages.ts';
import { registerResponses } from './routes/responses.ts';
import { registerGatewayOpenApi } from './routes/gateway-openapi.ts';
import { registerModels } from './routes/models.ts';
import { messagesErrorResponse } from './surfaces/messages/messages-errors.ts';

/** The OpenAI-compatible gateway: routing, metering, rating and booking of model calls. */
export function createGatewayApp(overrides: Partial<GatewayDependencies> = {}): ServiceApp {
  const dependencies = { ...defaultGatewayDependencies, ...overrides };
  const app = createServiceApp({
    service: 'gateway',
    title: 'Faucet gateway',
    version: workerVersions.gateway,
    rateLimit: {
      maxRequestsSetting: 'GATEWAY_RATE_LIMIT_MAX_REQUESTS',
      windowMsSetting: 'GATEWAY_RATE_LIMIT_WINDOW_MS',
      defaultMaxRequests: 600,
      defaultWindowMs: 60_000,
    },
    defaultMaxBodyBytes: 2 * 1024 * 1024,
    openDatabase: dependencies.openDatabase,
    // Anthropic's clients read Anthropic's envelope, also for a refusal made before the route runs.
    errorEnvelopes: [{ pathPrefix: '/v1/messages', render: messagesErrorResponse }],
  });
  registerChatCompletions(app, dependencies);
  registerResponses(app, dependencies);
  registerMessages(app, dependencies);
  registerEmbeddings(app, dependencies);
  registerModels(app);
  registerGatewayOpenApi(app);
  return app;
}
