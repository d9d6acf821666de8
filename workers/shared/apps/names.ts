/**
 * The names of apps and features: a display name (free text, bounded) and a feature key (what a call
 * names in `feature`, what usage records and audit targets carry). Checked in the services so the
 * API and the seed refuse the same inputs; the routes' schemas repeat the patterns for OpenAPI.
 */
import { FaucetError } from '../wire/errors.ts';

/** Letters, digits, `.`, `_`, `-`; starts with a letter or digit; no `:` or `/` (they separate names elsewhere). */
export const FEATURE_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const maxNameLength = 100;

export function displayName(value: string, field = 'name'): string {
  const name = value.trim();
  if (name.length === 0 || name.length > maxNameLength || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new FaucetError('invalid_request', `${field} must be 1–${maxNameLength} characters with no control characters`);
  }
  return name;
}

export function featureKey(value: string): string {
  if (!FEATURE_KEY_PATTERN.test(value)) {
    throw new FaucetError('invalid_request', 'feature_key must be 1–64 of A-Z a-z 0-9 . _ -, starting with a letter or digit');
  }
  return value;
}
