import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../src/log';
import { startBridge, type BridgeOptions, type RunningBridge } from '../src/server';

export interface TestBridge extends RunningBridge {
  logs: string[];
  outboxDirectory: string;
}

export async function makeOutboxDirectory(): Promise<string> {
  return join(await mkdtemp(join(tmpdir(), 'faucet-bridge-test-')), 'outbox');
}

/** An in-process bridge on a free loopback port, its log lines captured, retries fast. */
export async function startTestBridge(options: Partial<BridgeOptions> = {}): Promise<TestBridge> {
  const logs: string[] = [];
  const outboxDirectory = options.outboxDirectory ?? (await makeOutboxDirectory());
  const bridge = await startBridge({
    port: 0,
    host: '127.0.0.1',
    allowNonLoopback: false,
    allowedOrigins: [],
    detectCandidates: [],
    retry: { baseMs: 20, maxMs: 200 },
    log: createLogger((line) => logs.push(line)),
    ...options,
    outboxDirectory,
  });
  return Object.assign(bridge, { logs, outboxDirectory });
}

export const sessionToken = 'fvs_' + 'A'.repeat(43);

/** A valid usage report of the contract; override fields to break it. */
export function usageReport(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    request_id: 'brq_report-1',
    public_app_id: 'app_demo',
    user_id_hash: 'a'.repeat(64),
    feature: 'chat',
    route_mode: 'local',
    provider: 'ollama',
    model: 'llama3.2:3b',
    input_tokens: 11,
    output_tokens: 5,
    estimated: false,
    occurred_at: '2026-11-22T01:00:00.000Z',
    ...overrides,
  };
}
