/**
 * The developer's views (developer key), in nav order. The Overview is in the first bundle; the
 * others are loaded when first opened (React.lazy), which keeps the first view's JavaScript small.
 */
import { lazy } from 'react';
import type { View } from '../registry.ts';
import { Overview } from './Overview.tsx';

const Apps = lazy(() => import('./Apps.tsx').then((module) => ({ default: module.Apps })));
const Keys = lazy(() => import('./Keys.tsx').then((module) => ({ default: module.Keys })));
const EndUsers = lazy(() => import('./EndUsers.tsx').then((module) => ({ default: module.EndUsers })));
const Calls = lazy(() => import('./Calls.tsx').then((module) => ({ default: module.Calls })));
const Webhooks = lazy(() => import('./Webhooks.tsx').then((module) => ({ default: module.Webhooks })));
const Payouts = lazy(() => import('./Payouts.tsx').then((module) => ({ default: module.Payouts })));

export const developerViews: readonly View[] = [
  { path: '', label: 'Overview', component: Overview },
  { path: 'apps', label: 'Apps and features', component: Apps },
  { path: 'keys', label: 'Keys', component: Keys },
  { path: 'end-users', label: 'End users', component: EndUsers },
  { path: 'calls', label: 'Calls', component: Calls },
  { path: 'webhooks', label: 'Webhooks', component: Webhooks },
  { path: 'payouts', label: 'Payouts', component: Payouts },
];
