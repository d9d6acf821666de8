/**
 * The API app for the money endpoints' tests: a fresh control API with the money routes added when
 * `createApiApp` does not register them yet (tests only).
 */
import type { ServiceApp } from '../../../shared/app.ts';
import { createApiApp } from '../app.ts';
import { registerMoneyRoutes } from './money.ts';

let app: ServiceApp | undefined;

export function moneyApi(): ServiceApp {
  if (app) return app;
  app = createApiApp();
  if (!app.routes.some((route) => route.path === '/v1/user/wallet')) registerMoneyRoutes(app);
  return app;
}
