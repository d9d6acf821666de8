import { requestJson, type TransportConfig } from './http/transport.ts';
import type { SessionManager } from './session.ts';
import type { UsageRecord, Wallet } from './types.ts';

export interface UserAccountConfig {
  transport: TransportConfig;
  baseUrl: string;
  sessions: SessionManager;
}

export function getWallet(config: UserAccountConfig, signal?: AbortSignal): Promise<Wallet> {
  return config.sessions.withToken(
    (authorization) =>
      requestJson<Wallet>(config.transport, {
        method: 'GET',
        url: `${config.baseUrl}/v1/user/wallet`,
        authorization,
        signal,
        what: 'Wallet request',
      }),
    signal,
  );
}

/** The user's recent usage, newest first. */
export async function listUsage(config: UserAccountConfig, options: { limit?: number; signal?: AbortSignal } = {}): Promise<UsageRecord[]> {
  const limit = options.limit ?? 20;
  const page = await config.sessions.withToken(
    (authorization) =>
      requestJson<{ data: UsageRecord[] }>(config.transport, {
        method: 'GET',
        url: `${config.baseUrl}/v1/user/usage?limit=${encodeURIComponent(String(limit))}`,
        authorization,
        signal: options.signal,
        what: 'Usage request',
      }),
    options.signal,
  );
  return Array.isArray(page?.data) ? page.data : [];
}
