import { FaucetError, errorFromStreamEvent } from '../errors.ts';
import { newRequestId } from '../ids.ts';
import { completionText, toMessages } from '../messages.ts';
import { readSseData } from '../http/sse.ts';
import { openStream, requestJson } from '../http/transport.ts';
import { parseEvent, type StreamEvent } from '../http/stream-event.ts';
import type { ChatCompletion, ChatMessage, ChatOptions, ChatStreamPart, FaucetMetadata } from '../types.ts';
import { asBridgeError, type BridgeConfig } from './bridge-client.ts';
import {
  bridgeFacts,
  chooseModel,
  countTokens,
  resolveFacts,
  type BridgeFacts,
  type Counts,
  type ResolvedModel,
} from './local-call-facts.ts';
import { reportUsage, type ReportDeliveryConfig } from './report-delivery.ts';
import { buildUsageReport } from './usage-report.ts';

export interface LocalChatConfig extends BridgeConfig, ReportDeliveryConfig {
  publicAppId: string;
}

function bridgeBody(messages: ChatMessage[], model: string, options: ChatOptions, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { model, messages };
  if (options.temperature !== undefined) body.temperature = options.temperature;
  if (options.maxTokens !== undefined) body.max_tokens = options.maxTokens;
  if (stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  return body;
}

/** Reports the call (counts only) and returns its metadata with the report's fate. */
async function finishLocalCall(
  config: LocalChatConfig,
  requestId: string,
  resolved: ResolvedModel,
  counts: Counts,
  feature: string,
): Promise<FaucetMetadata> {
  const metadata = { request_id: requestId, route_mode: 'local' as const, provider: resolved.provider, model: resolved.model, ...counts };
  const userRef = await config.sessions.userRef();
  // A bare session token names no user_ref, and the server refuses a report without it: not sent.
  if (userRef === undefined) return { ...metadata, usage_report_status: 'rejected' };
  const report = await buildUsageReport({
    requestId,
    publicAppId: config.publicAppId,
    userRef,
    feature,
    provider: resolved.provider,
    model: resolved.model,
    inputTokens: counts.input_tokens,
    outputTokens: counts.output_tokens,
    estimated: counts.estimated,
    occurredAt: new Date(),
  });
  return { ...metadata, usage_report_status: await reportUsage(config, report) };
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
  let usage: StreamEvent['usage'];
  let facts: BridgeFacts = {};
  let finished = false;
  try {
    for await (const data of readSseData(response.body, deadline, config.transport.streamIdleTimeoutMs, 'Local chat stream')) {
      const event = parseEvent(data);
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
    finished = true;
  } finally {
    if (!finished && answer !== '') {
      // Stopped (abort, break, broken stream) after the model produced text: that usage is reported
      // too, estimated, in the background so stopping stays instant; a failed report is queued as usual.
      void resolveFacts(config, chosen, facts)
        .then((resolved) => finishLocalCall(config, requestId, resolved, countTokens(undefined, messages, answer), options.feature))
        .catch(() => undefined);
    }
  }
  const counts = facts.counts ?? countTokens(usage, messages, answer);
  const faucet = await finishLocalCall(config, requestId, await resolveFacts(config, chosen, facts), counts, options.feature);
  yield { type: 'metadata', faucet };
}
