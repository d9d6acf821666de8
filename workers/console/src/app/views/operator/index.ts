/** The operator's views (admin token), in nav order: see workers/console/README.md to add one. */
import type { View } from '../registry.ts';

export const operatorViews: readonly View[] = [];
