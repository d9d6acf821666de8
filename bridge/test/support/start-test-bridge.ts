import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';
import { createLogger } from '../../src/log';
import { startBridge, type BridgeOptions, type RunningBridge } from '../../src/server';

export interface TestBridge extends RunningBridge {
  logs: string[];
  outboxDirectory: string;
}

/** A fresh outbox path; it and its temp parent are removed when the current test finishes. */
export async function makeOutboxDirectory(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'faucet-bridge-test-'));
  onTestFinished(() => rm(parent, { recursive: true, force: true }));
  return join(parent, 'outbox');
}

/** An in-process bridge on a free loopback port, its log lines captured, retries fast. */
export async function startTestBridge(options: Partial<BridgeOptions> = {}): Promise<TestBridge> {
  const logs: string[] = [];
  const ownDirectory = options.outboxDirectory === undefined;
  const outboxDirectory = options.outboxDirectory ?? join(await mkdtemp(join(tmpdir(), 'faucet-bridge-test-')), 'outbox');
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
  const close = bridge.close;
  return Object.assign(bridge, {
    logs,
    outboxDirectory,
    // A directory the caller passed in may be reused by a later bridge (restart tests); only ours goes.
    close: async (graceMs?: number) => {
      await close(graceMs);
      if (ownDirectory) await rm(dirname(outboxDirectory), { recursive: true, force: true });
    },
  });
}

export const sessionToken = `fvs_${'A'.repeat(43)}`;

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
