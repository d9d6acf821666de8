import { networkInterfaces } from 'node:os';
import { hostHeaderFor, isLoopbackHost } from './loopback';

/**
 * The Host values a request may carry. A DNS-rebinding page reaches 127.0.0.1 under its own
 * name (`Host: evil.example`), so anything but the bridge's own names is refused.
 */
export function allowedHostHeaders(boundHost: string, port: number): Set<string> {
  const allowed = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  if (isLoopbackHost(boundHost)) return allowed;
  if (boundHost === '0.0.0.0' || boundHost === '::') {
    // A wildcard bind is reached by this machine's own addresses.
    for (const addresses of Object.values(networkInterfaces())) {
      for (const { address } of addresses ?? []) allowed.add(hostHeaderFor(address, port));
    }
  } else {
    allowed.add(hostHeaderFor(boundHost, port));
  }
  return allowed;
}

export function isAllowedHost(header: string | undefined, allowed: Set<string>): boolean {
  return header !== undefined && allowed.has(header.toLowerCase());
}
