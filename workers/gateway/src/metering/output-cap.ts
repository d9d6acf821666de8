/**
 * A feature's max output tokens: the request sent upstream asks for at most that many (its own
 * smaller limit is kept), so the provider cannot bill past the bound the call was authorized with.
 */
import type { ChatRequest } from '../openai/chat-schemas.ts';

export function capOutputTokens(request: ChatRequest, cap: number | null): ChatRequest {
  if (cap === null) return request;
  const requested = request.max_completion_tokens ?? request.max_tokens;
  if (requested !== null && requested !== undefined && requested <= cap) return request;
  // The field the client used keeps carrying the limit; with none, OpenAI's classic max_tokens.
  return request.max_completion_tokens !== null && request.max_completion_tokens !== undefined
    ? {
        ...request,
        max_completion_tokens: cap,
        max_tokens:
          request.max_tokens === null || request.max_tokens === undefined ? request.max_tokens : Math.min(request.max_tokens, cap),
      }
    : { ...request, max_tokens: cap };
}
