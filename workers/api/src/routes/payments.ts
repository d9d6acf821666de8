import type { ServiceApp } from '#shared/app.ts';
import { registerAdminClawbackRoutes } from './admin-clawbacks.ts';
import { registerAdminPayoutRoutes } from './admin-payouts.ts';
import { registerAdminReportRoutes } from './admin-reports.ts';
import { registerAdminStripeRoutes } from './admin-stripe.ts';
import { registerStripeWebhookRoutes } from './stripe-webhook.ts';
import { registerUserStripeCheckoutRoutes } from './user-stripe-checkout.ts';

/** Payments, payouts and reports (docs/payments.md): checkout, Stripe webhook, admin payouts, CSV reports. */
export function registerPaymentRoutes(app: ServiceApp): void {
  registerUserStripeCheckoutRoutes(app);
  registerStripeWebhookRoutes(app);
  registerAdminPayoutRoutes(app);
  registerAdminClawbackRoutes(app);
  registerAdminReportRoutes(app);
  registerAdminStripeRoutes(app);
}
