import type { Context } from 'hono';
import { FaucetError } from '../wire/errors.ts';

/** The token of an `Authorization: Bearer …` header, or a 401. */
export function bearerToken(c: Context): string {
  const header = c.req.header('authorization') ?? '';
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) throw new FaucetError('unauthorized', 'Missing bearer token');
  return match[1];
}
