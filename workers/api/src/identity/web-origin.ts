/** The web origins an app may list: `http(s)://host[:port]`, exactly as a browser sends `Origin`. */
import { z } from '@hono/zod-openapi';

export const maxAllowedOrigins = 20;

/** The canonical form of an origin, or null when `text` is not one (path, query, credentials, other scheme). */
export function canonicalOrigin(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  // A browser's Origin header is exactly `url.origin`; anything more (a path, a trailing slash) would never match.
  return url.origin === text ? url.origin : null;
}

export const WebOriginSchema = z
  .string()
  .max(300)
  .refine((value) => canonicalOrigin(value) !== null, 'must be an origin: http(s)://host[:port], lowercase, no path')
  .openapi({ example: 'https://app.example.com' });
