/**
 * `POST /v1/responses`: OpenAI's Responses API (what the OpenAI Agents SDK and the AI SDK's OpenAI
 * provider speak), served by the one pipeline (chat-call.ts): the body is read into a chat request
 * (surfaces/responses/: what cannot be honoured — built-in tools, stored state — is refused 400), and
 * the answer is written back as a response object, or as its typed stream events, with the `faucet`
 * object on the final response. Nothing is stored: `previous_response_id` and `store: true` are refused.
 * To OpenAI and Azure the request goes natively, to their Responses API (`store: false`), and their
 * response or events come back unchanged (providers/openai-compatible/responses-native.ts); the chat
 * translation still bounds the hold and serves every other provider.
 */
import type { ServiceApp } from '#shared/app.ts';
import { bearerToken } from '#shared/auth/bearer.ts';
import { sseHeaders } from '#shared/wire/format-sse.ts';
import type { GatewayDependencies } from '../gateway-dependencies.ts';
import { chatRequestOfResponses } from '../surfaces/responses/chat-request-of-responses.ts';
import { responsesEventStream } from '../surfaces/responses/responses-event-stream.ts';
import { parseResponsesBody, type ResponsesBody } from '../surfaces/responses/responses-request.ts';
import { responseOfChatCompletion } from '../surfaces/responses/responses-response.ts';
import { ResponsesStreamTranslator } from '../surfaces/responses/responses-stream.ts';
import { serveChatCall } from './chat-call.ts';
import type { ChatSurface } from './chat-surface.ts';
import { readJsonBody } from './chat-completions.ts';

const responses: ChatSurface = {
  name: 'responses',
  token: (c) => bearerToken(c),
  async read(c) {
    const body = parseResponsesBody(await readJsonBody(c));
    const { feature: _feature, route_mode: _route, ...native } = body;
    return {
      body,
      model: body.model,
      feature: body.feature,
      requestedRoute: body.route_mode,
      request: chatRequestOfResponses(body),
      stream: body.stream === true,
      // The translator reads the usage chunk for `response.completed`.
      includeUsage: true,
      responses: native,
    };
  },
  answer(c, completion, call, ids, headers) {
    // Answered natively (OpenAI, Azure): the upstream's response as it is, with the faucet object.
    const native = completion.responses_response;
    if (typeof native === 'object' && native !== null) return c.json({ ...native, faucet: completion.faucet }, 200, headers);
    return c.json(responseOfChatCompletion(completion, call.body as ResponsesBody, ids), 200, headers);
  },
  stream: (_c, metered, call, ids, headers) =>
    new Response(responsesEventStream(metered, new ResponsesStreamTranslator(call.body as ResponsesBody, ids)), {
      status: 200,
      headers: { ...sseHeaders, ...headers },
    }),
};

export function registerResponses(app: ServiceApp, dependencies: GatewayDependencies): void {
  app.post('/v1/responses', (c) => serveChatCall(c, dependencies, responses));
}
