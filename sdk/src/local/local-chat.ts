import { FaucetError, errorFromStreamEvent } from '../errors.ts';
import { newRequestId } from '../ids.ts';
import { completionText, toMessages } from '../messages.ts';
import { readSseData } from '../http/sse.ts';
import { openStream, requestJson } from '../http/transport.ts';
import { parseEvent } from '../cloud-chat.ts';
import type { ChatCompletion, ChatMessage, ChatOptions, ChatStreamPart, FaucetMetadata } from '../types.ts';
import { asBridgeError, listModels, type BridgeConfig } from './bridge-client.ts';
import { reportUsage, type ReportDeliveryConfig } from './report-delivery.ts';
import { buildUsageReport, estimateTokens } from './usage-report.ts';

export interface LocalChatConfig extends BridgeConfig, ReportDeliveryConfig {
  publicAppId: string;
  userId: string;
}

const providerKinds = new Set(['ollama', 'lmstudio', 'llamacpp', 'openai_compatible']);

/** What the bridge says about the call it proxied (its answer carries a `faucet` object like the gateway's). */
interface BridgeFacts {
  provider?: string;
  model?: string;
  counts?: Counts;
}

function bridgeFacts(value: unknown): BridgeFacts {
  const faucet = value as { provider?: unknown; model?: unknown; input_tokens?: unknown; output_tokens?: unknown; estimated?: unknown } | undefined;
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
async function chooseModel(config: LocalChatConfig, requested: string | undefined, signal?: AbortSignal): Promise<{ model: string; provider?: string }> {
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
async function providerOf(config: LocalChatConfig, model: string): Promise<string> {
  const models = await listModels(config).catch(() => []);
  return models.find((entry) => entry.id === model)?.provider ?? models[0]?.provider ?? 'openai_compatible';
}

interface ResolvedModel {
  provider: string;
  model: string;
}

async function resolveFacts(config: LocalChatConfig, chosen: { model: string; provider?: string }, facts: BridgeFacts): Promise<ResolvedModel> {
  const model = facts.model ?? chosen.model;
  return { model, provider: facts.provider ?? chosen.provider ?? (await providerOf(config, model)) };
}

function bridgeBody(messages: ChatMessage[], model: string, options: ChatOptions, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { model, messages };
  if (options.temperature !== undefined) body.temperature = options.temperature;
  if (options.maxTokens !== undefined) body.max_tokens = options.maxTokens;
  if (stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  return body;
}

interface Counts {
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
}

function countTokens(usage: { prompt_tokens?: number; completion_tokens?: number } | undefined, messages: ChatMessage[], answer: string): Counts {
  if (Number.isInteger(usage?.prompt_tokens) && Number.isInteger(usage?.completion_tokens)) {
    return { input_tokens: usage!.prompt_tokens!, output_tokens: usage!.completion_tokens!, estimated: false };
  }
  const promptText = messages.map((message) => message.content).join('\n');
  return { input_tokens: estimateTokens(promptText), output_tokens: estimateTokens(answer), estimated: true };
}

/** Reports the call (counts only) and returns its metadata with the report's fate. */
async function finishLocalCall(config: LocalChatConfig, requestId: string, resolved: ResolvedModel, counts: Counts, feature: string): Promise<FaucetMetadata> {
  const report = await buildUsageReport({
    requestId,
    publicAppId: config.publicAppId,
    userId: config.userId,
    feature,
    provider: resolved.provider,
    model: resolved.model,
    inputTokens: counts.input_tokens,
    outputTokens: counts.output_tokens,
    estimated: counts.estimated,
    occurredAt: new Date(),
  });
  const status = await reportUsage(config, report);
  return { request_id: requestId, route_mode: 'local', provider: resolved.provider, model: resolved.model, ...counts, usage_report_status: status };
}

/** A chat answered by the local model server through the bridge; the cloud only ever sees the usage report. */
export async function localChat(config: LocalChatConfig, options: ChatOptions): Promise<ChatCompletion> {
  const messages = toMessages(options.input);
  const chosen = await chooseModel(config, options.model, options.signal);
  const requestId = newRequestId('loc_');
  let completion: Omit<ChatCompletion, 'faucet'> & { faucet?: unknown };
  try {
    completion = await requestJson(config.transport, {
      method: 'POST',
      url: `${config.bridgeUrl}/v1/chat/completions`,
      headers: { 'x-request-id': requestId },
      body: bridgeBody(messages, chosen.model, options, false),
      signal: options.signal,
      what: 'Local chat request',
    });
  } catch (thrown) {
    throw asBridgeError(thrown, config.bridgeUrl);
  }
  const facts = bridgeFacts(completion?.faucet);
  const counts = facts.counts ?? countTokens(completion?.usage, messages, completionText(completion));
  const faucet = await finishLocalCall(config, requestId, await resolveFacts(config, chosen, facts), counts, options.feature);
  return { ...completion, faucet };
}

export async function* localChatStream(config: LocalChatConfig, options: ChatOptions): AsyncGenerator<ChatStreamPart> {
  const messages = toMessages(options.input);
  const chosen = await chooseModel(config, options.model, options.signal);
  const requestId = newRequestId('loc_');
  let opened;
  try {
    opened = await openStream(config.transport, {
      method: 'POST',
      url: `${config.bridgeUrl}/v1/chat/completions`,
      headers: { 'x-request-id': requestId },
      body: bridgeBody(messages, chosen.model, options, true),
      signal: options.signal,
      what: 'Local chat stream',
    });
  } catch (thrown) {
    throw asBridgeError(thrown, config.bridgeUrl);
  }
  const { response, deadline } = opened;
  if (!response.body) {
    deadline.dispose();
    throw new FaucetError('invalid_response', 'Local chat stream has no body');
  }
  let answer = '';
  let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
  let facts: BridgeFacts = {};
  for await (const data of readSseData(response.body, deadline, config.transport.streamIdleTimeoutMs, 'Local chat stream')) {
    const event = parseEvent(data) as ReturnType<typeof parseEvent> & { usage?: typeof usage };
    if (event.error) throw errorFromStreamEvent(event.error);
    if (event.object === 'faucet.usage') {
      facts = bridgeFacts(event.faucet);
      continue;
    }
    if (event.usage) usage = event.usage;
    const delta = event.choices?.[0]?.delta?.content;
    if (typeof delta === 'string' && delta !== '') {
      answer += delta;
      yield { type: 'delta', delta };
    }
  }
  const counts = facts.counts ?? countTokens(usage, messages, answer);
  const faucet = await finishLocalCall(config, requestId, await resolveFacts(config, chosen, facts), counts, options.feature);
  yield { type: 'metadata', faucet };
}
