import { randomUUID } from 'node:crypto';

const safeRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's x-request-id when it is short and safe; otherwise makes a new one. */
export function requestIdFrom(header: string | string[] | undefined): string {
  if (typeof header === 'string' && safeRequestId.test(header)) return header;
  return `brq_${randomUUID()}`;
}
