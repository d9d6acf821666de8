/** The routes a call can take (DESIGN §6): the one list every worker, schema and the SDK's pinned copy use. */
import { z } from 'zod';

export const routeModes = ['platform', 'developer_key', 'byok', 'local'] as const;
export type RouteMode = (typeof routeModes)[number];

/** The routes the cloud gateway serves; `local` runs on the user's machine through the bridge. */
export type CloudRouteMode = Exclude<RouteMode, 'local'>;

export const routeModeSchema = z.enum(routeModes);

export function isRouteMode(value: unknown): value is RouteMode {
  return typeof value === 'string' && (routeModes as readonly string[]).includes(value);
}
