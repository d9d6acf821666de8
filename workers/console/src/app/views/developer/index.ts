/** The developer's views (developer key), in nav order. */
import type { View } from '../registry.ts';
import { Overview } from './Overview.tsx';

export const developerViews: readonly View[] = [{ path: '', label: 'Overview', component: Overview }];
