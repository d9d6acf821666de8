import { FaucetError } from '../errors.ts';
import { requestJson, type TransportConfig } from '../http/transport.ts';
import type { BridgeDiagnosis, BridgeInfo, BridgeModel } from '../types.ts';

export const defaultBridgeUrl = 'http://127.0.0.1:17480';

/** Health and diagnostics are local and tiny: answer fast or count the bridge as absent. */
const probeTimeoutMs = 2_000;

export interface BridgeConfig {
  transport: TransportConfig;
  bridgeUrl: string;
}

function probeTransport(config: BridgeConfig): TransportConfig {
  return { ...config.transport, timeoutMs: Math.min(config.transport.timeoutMs, probeTimeoutMs) };
}

/** Network failures talking to the bridge mean it is not running; say so in the code. */
export function asBridgeError(thrown: unknown, bridgeUrl: string): unknown {
  if (FaucetError.isInstance(thrown) && (thrown.code === 'network_error' || thrown.code === 'timeout')) {
    return new FaucetError('bridge_unavailable', `No Faucet bridge answers at ${bridgeUrl} (start it with: faucet-bridge start)`, {
      cause: thrown,
    });
  }
  return thrown;
}

export async function detectBridge(config: BridgeConfig, signal?: AbortSignal): Promise<BridgeInfo> {
  try {
    const health = await requestJson<{ status?: string; version?: string }>(probeTransport(config), {
      method: 'GET',
      url: `${config.bridgeUrl}/health`,
      retry: false,
      signal,
      what: 'Bridge health check',
    });
    const available = health?.status === 'ok';
    return { available, url: config.bridgeUrl, ...(typeof health?.version === 'string' ? { version: health.version } : {}) };
  } catch (thrown) {
    if (FaucetError.isInstance(thrown) && thrown.code === 'aborted') throw thrown;
    return { available: false, url: config.bridgeUrl };
  }
}

export async function listModels(config: BridgeConfig, signal?: AbortSignal): Promise<BridgeModel[]> {
  try {
    const list = await requestJson<{ data?: BridgeModel[] }>(probeTransport(config), {
      method: 'GET',
      url: `${config.bridgeUrl}/models`,
      retry: false,
      signal,
      what: 'Bridge model list',
    });
    if (!Array.isArray(list?.data)) throw new FaucetError('invalid_response', 'Bridge model list lacks data');
    return list.data;
  } catch (thrown) {
    throw asBridgeError(thrown, config.bridgeUrl);
  }
}

/** Whether local calls can work, and in plain words why not. */
export async function diagnose(config: BridgeConfig, signal?: AbortSignal): Promise<BridgeDiagnosis> {
  const bridge = await detectBridge(config, signal);
  if (!bridge.available) {
    return { available: false, problems: [`No Faucet bridge answers at ${config.bridgeUrl}; start it with: faucet-bridge start`] };
  }
  let diagnostics: BridgeDiagnosis['diagnostics'];
  try {
    diagnostics = await requestJson<NonNullable<BridgeDiagnosis['diagnostics']>>(probeTransport(config), {
      method: 'GET',
      url: `${config.bridgeUrl}/diagnostics`,
      retry: false,
      signal,
      what: 'Bridge diagnostics',
    });
  } catch (thrown) {
    if (FaucetError.isInstance(thrown) && thrown.code === 'aborted') throw thrown;
    return { available: false, problems: [`The bridge at ${config.bridgeUrl} did not return its diagnostics`] };
  }
  const problems: string[] = [];
  if (diagnostics?.loopback === false) problems.push(`The bridge listens on ${diagnostics.bound_address}, not only on loopback`);
  const upstream = diagnostics?.upstream;
  if (!upstream?.reachable) {
    const reason = upstream?.reason ? `: ${upstream.reason}` : '';
    problems.push(`The local model server (${upstream?.kind ?? 'unknown'} at ${upstream?.url ?? 'unknown'}) is not reachable${reason}`);
  }
  return { available: problems.length === 0, problems, diagnostics };
}
