import { FaucetError } from '../errors.ts';
import type { ChatMessage } from '../types.ts';
import { listModels, type BridgeConfig } from './bridge-client.ts';
import { estimateInputTokens, estimateTextTokens } from '../../../workers/shared/wire/estimate-tokens.ts';

/**
 * What the usage report of a local call says about it: which model and provider, and how many
 * tokens — from the bridge's `faucet` object when it sends one, else from the upstream's `usage`,
 * else estimated and marked so.
 */
const providerKinds = new Set(['ollama', 'lmstudio', 'llamacpp', 'openai_compatible']);

/** What the bridge says about the call it proxied (its answer carries a `faucet` object like the gateway's). */
export interface BridgeFacts {
  provider?: string;
  model?: string;
  counts?: Counts;
}

export function bridgeFacts(value: unknown): BridgeFacts {
  const faucet = value as
    | { provider?: unknown; model?: unknown; input_tokens?: unknown; output_tokens?: unknown; estimated?: unknown }
    | undefined;
  if (typeof faucet !== 'object' || faucet === null) return {};
  const facts: BridgeFacts = {};
  if (typeof faucet.provider === 'string') facts.provider = faucet.provider;
  if (typeof faucet.model === 'string') facts.model = faucet.model;
  if (isCount(faucet.input_tokens) && isCount(faucet.output_tokens) && typeof faucet.estimated === 'boolean') {
    facts.counts = { input_tokens: faucet.input_tokens, output_tokens: faucet.output_tokens, estimated: faucet.estimated };
  }
  return facts;
}

function isCount(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0;
}

/** The model id to send: the caller's (an explicit `ollama:` style prefix is dropped), or the bridge's first model. */
export async function chooseModel(
  config: BridgeConfig,
  requested: string | undefined,
  signal?: AbortSignal,
): Promise<{ model: string; provider?: string }> {
  if (requested === undefined) {
    const first = (await listModels(config, signal))[0];
    if (!first) throw new FaucetError('invalid_request', 'The local model server offers no models');
    return { model: first.id, provider: first.provider };
  }
  const colon = requested.indexOf(':');
  const prefix = requested.slice(0, colon);
  if (colon > 0 && providerKinds.has(prefix)) return { model: requested.slice(colon + 1), provider: prefix };
  return { model: requested };
}

/** The provider for the report when the bridge did not name it: from the bridge's model list. */
async function providerOf(config: BridgeConfig, model: string): Promise<string> {
  const models = await listModels(config).catch(() => []);
  return models.find((entry) => entry.id === model)?.provider ?? models[0]?.provider ?? 'openai_compatible';
}

export interface ResolvedModel {
  provider: string;
  model: string;
}

export async function resolveFacts(
  config: BridgeConfig,
  chosen: { model: string; provider?: string },
  facts: BridgeFacts,
): Promise<ResolvedModel> {
  const model = facts.model ?? chosen.model;
  return { model, provider: facts.provider ?? chosen.provider ?? (await providerOf(config, model)) };
}

export interface Counts {
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
}

export function countTokens(
  usage: { prompt_tokens?: number; completion_tokens?: number } | undefined,
  messages: ChatMessage[],
  answer: string,
): Counts {
  if (Number.isInteger(usage?.prompt_tokens) && Number.isInteger(usage?.completion_tokens)) {
    return { input_tokens: usage!.prompt_tokens!, output_tokens: usage!.completion_tokens!, estimated: false };
  }
  return { input_tokens: estimateInputTokens(messages), output_tokens: estimateTextTokens(answer.length), estimated: true };
}
