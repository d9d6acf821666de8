/** The money endpoints of the control API: wallet and usage for users, ledger operations for admins. */
import type { ServiceApp } from '#shared/app.ts';
import { registerAdminAdjustmentRoutes } from './admin-adjustments.ts';
import { registerAdminCreditTestBalanceRoutes } from './admin-credit-test-balance.ts';
import { registerAdminReconciliationRoutes } from './admin-reconciliation.ts';
import { registerUsageLocalRoutes } from './usage-local.ts';
import { registerUserUsageRoutes } from './user-usage.ts';
import { registerUserWalletRoutes } from './user-wallet.ts';

export function registerMoneyRoutes(app: ServiceApp): void {
  registerUserWalletRoutes(app);
  registerUserUsageRoutes(app);
  registerUsageLocalRoutes(app);
  registerAdminCreditTestBalanceRoutes(app);
  registerAdminAdjustmentRoutes(app);
  registerAdminReconciliationRoutes(app);
}
