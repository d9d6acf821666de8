import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllowedOrigin } from '../http/cors';
import { isUpstreamKind, parseUpstreamUrl } from '../upstream/upstream-kind';
import type { BridgeOptions } from '../server';

export const defaultPort = 17480;

export type CliCommand =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'start'; options: BridgeOptions }
  | { kind: 'error'; message: string };

/** Turns argv (without node and script) and the environment into what to do; never throws. */
export function parseCli(argv: string[], env: NodeJS.ProcessEnv): CliCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        port: { type: 'string', short: 'p' },
        host: { type: 'string' },
        'allow-non-loopback': { type: 'boolean' },
        upstream: { type: 'string' },
        'upstream-kind': { type: 'string' },
        'api-base-url': { type: 'string' },
        'allow-origin': { type: 'string', multiple: true },
        'outbox-dir': { type: 'string' },
      },
    });
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
  const { values, positionals } = parsed;
  if (values.help || positionals[0] === 'help') return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  if (positionals.length === 0) return { kind: 'help' };
  if (positionals[0] !== 'start' || positionals.length > 1)
    return { kind: 'error', message: `Unknown command "${positionals.join(' ')}".` };

  try {
    const port = parsePort(values.port ?? env.FAUCET_BRIDGE_PORT ?? String(defaultPort));
    const upstreamKind = values['upstream-kind'];
    if (upstreamKind !== undefined && !isUpstreamKind(upstreamKind)) {
      throw new Error('--upstream-kind must be one of ollama, lmstudio, llamacpp, openai_compatible');
    }
    const upstreamUrl = values.upstream ?? env.FAUCET_BRIDGE_UPSTREAM;
    const origins = [...(values['allow-origin'] ?? []), ...splitList(env.FAUCET_BRIDGE_ALLOWED_ORIGINS)];
    const apiBaseUrl = values['api-base-url'] ?? env.FAUCET_API_BASE_URL;
    if (apiBaseUrl !== undefined && !/^https?:\/\/[^/]/.test(apiBaseUrl)) throw new Error('--api-base-url must be an http(s) URL');
    return {
      kind: 'start',
      options: {
        port,
        host: values.host ?? '127.0.0.1',
        allowNonLoopback: values['allow-non-loopback'] === true,
        upstream: upstreamUrl ? parseUpstreamUrl(upstreamUrl, upstreamKind) : undefined,
        upstreamApiKey: env.FAUCET_BRIDGE_UPSTREAM_API_KEY || undefined,
        apiBaseUrl,
        allowedOrigins: origins.map(parseAllowedOrigin),
        outboxDirectory: values['outbox-dir'] ?? env.FAUCET_BRIDGE_OUTBOX_DIR ?? defaultOutboxDirectory(env),
      },
    };
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 0 || port > 65535) throw new Error(`--port must be a number from 0 to 65535, not "${value}"`);
  return port;
}

function splitList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Per-user state directory: $XDG_STATE_HOME, %LOCALAPPDATA% or ~/.local/state. */
function defaultOutboxDirectory(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_STATE_HOME || env.LOCALAPPDATA || join(homedir(), '.local', 'state');
  return join(base, 'faucet-bridge', 'outbox');
}
