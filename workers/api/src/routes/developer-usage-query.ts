/**
 * The query string of `GET /v1/developer/usage` (docs/developers.md, "Usage"): which local days, in
 * which time zone, and where a page starts. Everything is checked here, before any SQL, so a bad
 * value is a 400 `invalid_request` and never reaches a cast or `at time zone`.
 */
import { z } from '@hono/zod-openapi';
import type { UsageKey } from '#shared/usage/developer-usage.ts';
import { FaucetError } from '#shared/wire/errors.ts';

/** The longest range one request may ask for, in local days (a leap year). */
export const MAX_RANGE_DAYS = 366;
const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** `UTC` or an IANA Area/Location name; what Intl and PostgreSQL both resolve the same way. */
const ZONE = /^(?:UTC|[A-Z][A-Za-z_]+(?:\/[A-Za-z0-9_+-]+){1,2})$/;

export const DeveloperUsageQuery = z.object({
  from: z.string().max(10).openapi({ description: 'First local day, YYYY-MM-DD (inclusive)', example: '2026-01-01' }),
  to: z
    .string()
    .max(10)
    .openapi({ description: `Last local day, YYYY-MM-DD (inclusive); at most ${MAX_RANGE_DAYS} days after from` }),
  tz: z
    .string()
    .max(64)
    .optional()
    .openapi({ description: 'IANA time zone the days are counted in (default UTC)', example: 'Europe/Berlin' }),
  app: z.string().max(64).optional().openapi({ description: 'Only this app (its public_app_id)' }),
  limit: z.coerce.number().int().min(1).max(1000).optional().openapi({ description: 'Rows per page (default 100, at most 1000)' }),
  cursor: z.string().max(2048).optional().openapi({ description: 'next_cursor of the previous page (same from, to, tz and app)' }),
});

/** Days since the epoch of a real calendar date, or a 400. */
function parseDay(name: string, value: string): number {
  const time = DATE.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  if (!Number.isFinite(time) || new Date(time).toISOString().slice(0, 10) !== value) {
    throw new FaucetError('invalid_request', `${name} must be a calendar date, YYYY-MM-DD`);
  }
  return time / DAY_MS;
}

/** A range of local days, both ends inclusive, of at most `maxDays` days (the request log's stats take 90). */
export function parseUsageRange(query: { from: string; to: string }, maxDays = MAX_RANGE_DAYS): { from: string; to: string } {
  const from = parseDay('from', query.from);
  const to = parseDay('to', query.to);
  if (from > to) throw new FaucetError('invalid_request', 'from must not be after to');
  if (to - from + 1 > maxDays) throw new FaucetError('invalid_request', `the range may span at most ${maxDays} days`);
  return { from: query.from, to: query.to };
}

export function parseTimeZone(value: string | undefined): string {
  if (value === undefined) return 'UTC';
  let known = ZONE.test(value);
  if (known) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: value });
    } catch {
      known = false;
    }
  }
  if (!known) throw new FaucetError('invalid_request', 'tz must be an IANA time zone name such as Europe/Berlin, or UTC');
  return value;
}

/** The cursor is the last row's key, base64url-encoded JSON: opaque to clients, checked on the way in. */
export function encodeUsageCursor(key: UsageKey): string {
  const json = JSON.stringify([key.day, key.publicAppId, key.featureKey, key.model, key.provider, key.routeMode]);
  let binary = '';
  for (const byte of new TextEncoder().encode(json)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

export function decodeUsageCursor(cursor: string | undefined): UsageKey | undefined {
  if (cursor === undefined) return undefined;
  const malformed = new FaucetError('invalid_request', 'cursor is malformed');
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw malformed;
  let parts: unknown;
  try {
    const binary = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'));
    parts = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0))));
  } catch {
    throw malformed;
  }
  if (!Array.isArray(parts) || parts.length !== 6 || !parts.every((part) => typeof part === 'string' && part.length <= 256)) {
    throw malformed;
  }
  const [day, publicAppId, featureKey, model, provider, routeMode] = parts as string[];
  if (!DATE.test(day!) || !Number.isFinite(Date.parse(`${day}T00:00:00Z`))) throw malformed;
  return { day: day!, publicAppId: publicAppId!, featureKey: featureKey!, model: model!, provider: provider!, routeMode: routeMode! };
}
