import { FaucetError } from '../errors.ts';
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

interface ResolvedModel {
  provider: string;
  model: string;
}

/** The bridge's model id and its provider: from the bridge's list, or an explicit `provider:` prefix. */
async function resolveModel(config: LocalChatConfig, requested: string | undefined, signal?: AbortSignal): Promise<ResolvedModel> {
  const models = await listModels(config, signal);
  if (requested === undefined) {
    const first = models[0];
    if (!first) throw new FaucetError('invalid_request', 'The local model server offers no models');
    return { provider: first.provider, model: first.id };
  }
  const listed = models.find((entry) => entry.id === requested);
  if (listed) return { provider: listed.provider, model: listed.id };
  const colon = requested.indexOf(':');
  const prefix = requested.slice(0, colon);
  if (colon > 0 && providerKinds.has(prefix)) return { provider: prefix, model: requested.slice(colon + 1) };
  return { provider: models[0]?.provider ?? 'openai_compatible', model: requested };
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
  const resolved = await resolveModel(config, options.model, options.signal);
  const requestId = newRequestId('loc_');
  let completion: Omit<ChatCompletion, 'faucet'>;
  try {
    completion = await requestJson(config.transport, {
      method: 'POST',
      url: `${config.bridgeUrl}/v1/chat/completions`,
      headers: { 'x-request-id': requestId },
      body: bridgeBody(messages, resolved.model, options, false),
      signal: options.signal,
      what: 'Local chat request',
    });
  } catch (thrown) {
    throw asBridgeError(thrown, config.bridgeUrl);
  }
  const counts = countTokens(completion?.usage, messages, completionText(completion));
  const faucet = await finishLocalCall(config, requestId, resolved, counts, options.feature);
  return { ...completion, faucet };
}

export async function* localChatStream(config: LocalChatConfig, options: ChatOptions): AsyncGenerator<ChatStreamPart> {
  const messages = toMessages(options.input);
  const resolved = await resolveModel(config, options.model, options.signal);
  const requestId = newRequestId('loc_');
  let opened;
  try {
    opened = await openStream(config.transport, {
      method: 'POST',
      url: `${config.bridgeUrl}/v1/chat/completions`,
      headers: { 'x-request-id': requestId },
      body: bridgeBody(messages, resolved.model, options, true),
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
  for await (const data of readSseData(response.body, deadline, config.transport.streamIdleTimeoutMs, 'Local chat stream')) {
    const event = parseEvent(data) as ReturnType<typeof parseEvent> & { usage?: typeof usage };
    if (event.usage) usage = event.usage;
    const delta = event.choices?.[0]?.delta?.content;
    if (typeof delta === 'string' && delta !== '') {
      answer += delta;
      yield { type: 'delta', delta };
    }
  }
  const faucet = await finishLocalCall(config, requestId, resolved, countTokens(usage, messages, answer), options.feature);
  yield { type: 'metadata', faucet };
}
