/**
 * What a model API (a surface) gives the one pipeline of `chat-call.ts`: the call it read from its
 * request, as a chat request, and how it writes the answer back in its own words.
 */
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import type { CallSurface } from '#shared/calls/call-log.ts';
import type { RouteMode } from '#shared/wire/route-modes.ts';
import type { FaucetObject } from '../metering/faucet-object.ts';
import type { ChatCompletion, ChatRequest } from '../openai/chat-schemas.ts';
import type { ChatCompletionsBody } from './chat-completions-body.ts';

/** What a surface read from its request: the chat request the providers are called with, and how. */
export interface SurfaceCall {
  /** The body as the client sent it: the idempotency fingerprint is taken over it. */
  body: unknown;
  /** The model the client named (`provider:model`, a bare name, or an alias of the feature). */
  model: string;
  /** Undefined: the app's default feature. */
  feature: string | undefined;
  requestedRoute: RouteMode | undefined;
  request: ChatRequest;
  stream: boolean;
  /** The metered stream passes the usage chunk on (chat's `stream_options.include_usage`; the translating surfaces need it). */
  includeUsage: boolean;
  /**
   * The Responses surface's request without Faucet's fields: sent as it is to an upstream that serves
   * the Responses API (OpenAI, Azure), whose events the surface then answers with unchanged.
   */
  responses?: Record<string, unknown>;
}

/** What names an answer: the gateway's call id, the client's request id, when the call started (Unix seconds). */
export interface AnswerIds {
  callId: string;
  requestId: string;
  createdAt: number;
}

/** One API a client speaks, over the one pipeline. */
export interface ChatSurface {
  /** Its name in the request log. */
  name: CallSurface;
  /** The session token the request carries (its shape is checked by the pipeline). */
  token(c: Context<AppEnv>): string;
  /** The request as a chat call; a `FaucetError` for a body that cannot be served. */
  read(c: Context<AppEnv>): Promise<SurfaceCall>;
  /** The answer to a call not streamed: the completion and its `faucet` object, in the surface's words. */
  answer(
    c: Context<AppEnv>,
    completion: ChatCompletion & { faucet: FaucetObject },
    call: SurfaceCall,
    ids: AnswerIds,
    headers: Record<string, string>,
  ): Response;
  /** The answer to a streamed call: the metered stream's SSE (chat chunks, usage, `[DONE]` or an error), in the surface's words. */
  stream(
    c: Context<AppEnv>,
    metered: ReadableStream<Uint8Array>,
    call: SurfaceCall,
    ids: AnswerIds,
    headers: Record<string, string>,
  ): Response;
}

/** A chat-shaped body (chat completions, or what the Messages surface reads) as the call the pipeline serves. */
export function surfaceCallOfChatBody(body: ChatCompletionsBody, includeUsage: boolean): SurfaceCall {
  const { feature, route_mode: requestedRoute, model, ...openAiFields } = body;
  return { body, model, feature, requestedRoute, request: { ...openAiFields, model }, stream: body.stream === true, includeUsage };
}
