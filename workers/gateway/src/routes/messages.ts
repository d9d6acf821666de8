/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens`: Anthropic's Messages API (what Claude
 * Code speaks to `ANTHROPIC_BASE_URL`), served by the one pipeline (chat-call.ts). The session token
 * comes as `x-api-key: fvs_…` or `Authorization: Bearer fvs_…`; `anthropic-version` is required and
 * `anthropic-beta` passes an allow-list (surfaces/messages/messages-headers.ts); `?beta=true` is
 * accepted. The body is read into a chat request, the answer written back as a Message or its stream
 * events; every error on these routes is in Anthropic's envelope, still carrying `request_id`.
 */
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import type { ServiceApp } from '#shared/app.ts';
import { findLiveSession, hashSessionToken } from '#shared/auth/require-session.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { sseHeaders } from '#shared/wire/format-sse.ts';
import type { GatewayDependencies } from '../gateway-dependencies.ts';
import { chatRequestOfMessages } from '../surfaces/messages/chat-request-of-messages.ts';
import { countMessagesTokens } from '../surfaces/messages/count-tokens.ts';
import { messagesErrorResponse } from '../surfaces/messages/messages-errors.ts';
import { acceptedBetas, requireAnthropicVersion, sessionTokenOf } from '../surfaces/messages/messages-headers.ts';
import { parseCountTokensRequest, parseMessagesRequest } from '../surfaces/messages/messages-request.ts';
import { messageOfChatCompletion } from '../surfaces/messages/messages-response.ts';
import { messagesEventStream } from '../surfaces/messages/messages-stream.ts';
import { serveChatCall } from './chat-call.ts';
import { type ChatSurface, surfaceCallOfChatBody } from './chat-surface.ts';
import { readJsonBody } from './chat-completions.ts';

/** While the upstream is silent (a model thinking), a `ping` this often keeps clients and proxies from timing out. */
const pingIntervalMs = 10_000;

const messages: ChatSurface = {
  name: 'messages',
  token: (c) => sessionTokenOf(c.req.raw.headers),
  async read(c) {
    checkHeaders(c);
    // The translator reads the usage chunk for `message_delta`.
    return surfaceCallOfChatBody(chatRequestOfMessages(parseMessagesRequest(await readJsonBody(c))), true);
  },
  answer: (c, completion, _call, ids, headers) => c.json(messageOfChatCompletion(completion, ids), 200, headers),
  stream: (_c, metered, call, ids, headers) =>
    new Response(messagesEventStream(metered, { callId: ids.callId, requestId: ids.requestId, model: call.model, pingIntervalMs }), {
      status: 200,
      headers: { ...sseHeaders, ...headers },
    }),
};

export function registerMessages(app: ServiceApp, dependencies: GatewayDependencies): void {
  app.post('/v1/messages', (c) => inAnthropicWords(c, () => serveChatCall(c, dependencies, messages)));
  app.post('/v1/messages/count_tokens', (c) =>
    inAnthropicWords(c, async () => {
      // A live session, as for a call: the count is the gateway's, not an open tokenizer.
      const tokenHash = await hashSessionToken(sessionTokenOf(c.req.raw.headers));
      if (tokenHash === undefined) throw new FaucetError('unauthorized', 'Invalid session token');
      if (!(await findLiveSession(c.var.database().db, tokenHash))) throw new FaucetError('unauthorized', 'Session is unknown or expired');
      checkHeaders(c);
      return c.json(countMessagesTokens(parseCountTokensRequest(await readJsonBody(c))), 200);
    }),
  );
}

/** `anthropic-version` is required and `anthropic-beta` passes the allow-list, as Anthropic's own API checks them. */
function checkHeaders(c: Context<AppEnv>): void {
  requireAnthropicVersion(c.req.raw.headers);
  acceptedBetas(c.req.raw.headers);
}

/** Every error on the Messages routes in Anthropic's envelope (status unchanged); one not expected is logged as the app's handler would. */
async function inAnthropicWords(c: Context<AppEnv>, serve: () => Promise<Response>): Promise<Response> {
  try {
    return await serve();
  } catch (error) {
    if (!FaucetError.isInstance(error)) c.var.logger?.error('unhandled error on the Messages surface', { error: (error as Error).name });
    return messagesErrorResponse(error, c.var.requestId);
  }
}
