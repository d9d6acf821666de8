/** The operator's views (admin token), in nav order: see workers/console/README.md to add one. */
import type { View } from '../registry.ts';
import { Adjustments } from './Adjustments.tsx';
import { Developers } from './Developers.tsx';
import { Health } from './Health.tsx';
import { Payouts } from './Payouts.tsx';
import { StripeEvents } from './StripeEvents.tsx';

export const operatorViews: readonly View[] = [
  { path: '', label: 'Payouts', component: Payouts },
  { path: 'reconciliation', label: 'Reconciliation', component: Health },
  { path: 'adjustments', label: 'Wallet adjustments', component: Adjustments },
  { path: 'developers', label: 'Developers', component: Developers },
  { path: 'stripe', label: 'Stripe', component: StripeEvents },
];
