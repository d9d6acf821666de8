import { isIP } from 'node:net';

/** True for names and addresses that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(bare);
  return false;
}

/** `host:port` as it appears in a Host header (IPv6 literals in brackets). */
export function hostHeaderFor(host: string, port: number): string {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return isIP(bare) === 6 ? `[${bare}]:${port}` : `${bare}:${port}`;
}
