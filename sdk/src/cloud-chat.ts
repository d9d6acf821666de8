import { FaucetError, errorFromStreamEvent } from './errors.ts';
import { newRequestId } from './ids.ts';
import { toMessages } from './messages.ts';
import { readSseData } from './http/sse.ts';
import { parseEvent } from './http/stream-event.ts';
import { openStream, requestJson, type TransportConfig } from './http/transport.ts';
import type { SessionManager } from './session.ts';
import type { ChatCompletion, ChatOptions, ChatStreamPart, FaucetMetadata } from './types.ts';

export interface CloudChatConfig {
  transport: TransportConfig;
  gatewayBaseUrl: string;
  sessions: SessionManager;
}

function requestBody(options: ChatOptions, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { messages: toMessages(options.input), feature: options.feature };
  if (options.model !== undefined) body.model = options.model;
  if (options.routeMode !== undefined) body.route_mode = options.routeMode;
  if (options.temperature !== undefined) body.temperature = options.temperature;
  if (options.maxTokens !== undefined) body.max_tokens = options.maxTokens;
  if (stream) body.stream = true;
  return body;
}

function isMetadata(value: unknown): value is FaucetMetadata {
  const metadata = value as Partial<FaucetMetadata> | undefined;
  return typeof metadata?.request_id === 'string' && typeof metadata.route_mode === 'string';
}

/** One chat completion through the gateway. */
export async function cloudChat(config: CloudChatConfig, options: ChatOptions): Promise<ChatCompletion> {
  const body = requestBody(options, false);
  const requestId = newRequestId('sdk_');
  const completion = await config.sessions.withToken(
    (authorization) =>
      requestJson<ChatCompletion>(config.transport, {
        method: 'POST',
        url: `${config.gatewayBaseUrl}/v1/chat/completions`,
        headers: { 'x-request-id': requestId },
        authorization,
        body,
        signal: options.signal,
        what: 'Chat request',
      }),
    options.signal,
  );
  if (!isMetadata(completion?.faucet)) throw new FaucetError('invalid_response', 'Chat answer lacks the faucet metadata');
  return completion;
}

/** A streamed chat completion: text deltas, then the faucet metadata as the last part. */
export async function* cloudChatStream(config: CloudChatConfig, options: ChatOptions): AsyncGenerator<ChatStreamPart> {
  const body = requestBody(options, true);
  const requestId = newRequestId('sdk_');
  const { response, deadline } = await config.sessions.withToken(
    (authorization) =>
      openStream(config.transport, {
        method: 'POST',
        url: `${config.gatewayBaseUrl}/v1/chat/completions`,
        headers: { 'x-request-id': requestId },
        authorization,
        body,
        signal: options.signal,
        what: 'Chat stream',
      }),
    options.signal,
  );
  if (!response.body) {
    deadline.dispose();
    throw new FaucetError('invalid_response', 'Chat stream has no body');
  }
  let metadata: FaucetMetadata | undefined;
  for await (const data of readSseData(response.body, deadline, config.transport.streamIdleTimeoutMs, 'Chat stream')) {
    const event = parseEvent(data);
    if (event.error) throw errorFromStreamEvent(event.error);
    if (event.object === 'faucet.usage' && isMetadata(event.faucet)) {
      metadata = event.faucet;
      continue;
    }
    const delta = event.choices?.[0]?.delta?.content;
    if (typeof delta === 'string' && delta !== '') yield { type: 'delta', delta };
  }
  if (!metadata) throw new FaucetError('invalid_response', 'Chat stream ended without the faucet metadata');
  yield { type: 'metadata', faucet: metadata };
}
