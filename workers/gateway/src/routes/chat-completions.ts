/**
 * `POST /v1/chat/completions`: OpenAI's chat completions, the gateway's own protocol — the body is the
 * chat request (plus Faucet's `feature` and `route_mode`), the answer the completion plus its `faucet`
 * object, or its stream as it comes. The call itself is the one pipeline (chat-call.ts).
 */
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import type { ServiceApp } from '#shared/app.ts';
import { bearerToken } from '#shared/auth/bearer.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { describeZodError } from '#shared/render-error.ts';
import { sseHeaders } from '#shared/wire/format-sse.ts';
import type { GatewayDependencies } from '../gateway-dependencies.ts';
import { serveChatCall } from './chat-call.ts';
import { type ChatSurface, surfaceCallOfChatBody } from './chat-surface.ts';
import { chatCompletionsBodySchema } from './chat-completions-body.ts';

const chatCompletions: ChatSurface = {
  name: 'chat.completions',
  token: (c) => bearerToken(c),
  async read(c) {
    const parsed = chatCompletionsBodySchema.safeParse(await readJsonBody(c));
    if (!parsed.success) throw new FaucetError('invalid_request', describeZodError(parsed.error));
    return surfaceCallOfChatBody(parsed.data, parsed.data.stream_options?.include_usage === true);
  },
  answer: (c, completion, _call, _ids, headers) => c.json(completion, 200, headers),
  stream: (_c, metered, _call, _ids, headers) => new Response(metered, { status: 200, headers: { ...sseHeaders, ...headers } }),
};

export function registerChatCompletions(app: ServiceApp, dependencies: GatewayDependencies): void {
  app.post('/v1/chat/completions', (c) => serveChatCall(c, dependencies, chatCompletions));
}

/** The request's JSON body; a body that is not JSON is a 400 naming it. */
export async function readJsonBody(c: Context<AppEnv>): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new FaucetError('invalid_request', 'The request body must be a JSON object.');
  }
}
