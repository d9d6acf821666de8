/**
 * Local stacks and tests only: the one loopback `host:port` the gateway may call, where a fake
 * upstream listens (`UPSTREAM_ALLOW_LOOPBACK=127.0.0.1:PORT`). Never in production, whatever the
 * setting says, and never a range: exactly one literal loopback address and port, so every other
 * local service stays out of reach (DESIGN §6).
 */
import { isProduction, type Env } from '../env.ts';
import type { ProviderEntry } from '../providers/provider-catalog.ts';

const loopbackHostPort = /^(127\.0\.0\.1|\[::1\]):([1-9][0-9]{0,4})$/;

export function loopbackAllowance(env: Env): string | null {
  if (isProduction(env)) return null;
  const value = env.UPSTREAM_ALLOW_LOOPBACK;
  if (typeof value !== 'string') return null;
  const match = loopbackHostPort.exec(value);
  return match !== null && Number(match[2]) <= 65_535 ? value : null;
}

/**
 * The platform pool's API root for a provider: the setting its catalog entry names when set
 * (`OPENAI_BASE_URL` for another OpenAI-compatible endpoint, `ANTHROPIC_BASE_URL` for Anthropic's
 * host as its SDK names it, `AZURE_OPENAI_BASE_URL` for the platform's Azure resource), else the
 * catalog's. Still address-checked, so in production it must be public.
 */
export function platformBaseUrl(env: Env, entry: ProviderEntry): string {
  const override = entry.poolBaseUrlSetting === undefined ? undefined : env[entry.poolBaseUrlSetting];
  if (typeof override !== 'string' || override === '') return entry.baseUrl;
  return entry.poolBaseUrlPath === undefined ? override : `${override.replace(/\/+$/, '')}${entry.poolBaseUrlPath}`;
}
