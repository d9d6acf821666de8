/**
 * The most tokens a call can be billed for, which the platform route holds before it calls the
 * upstream. Input is bounded by the prompt's UTF-8 bytes (a byte-level BPE token is at least one
 * byte), so the actual count the provider reports never exceeds the hold for text; output by the
 * request's max tokens or the model's cap.
 */
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { outputTokenCap } from '../providers/provider-catalog.ts';
import { messageText } from '../tokens/count-prompt-tokens.ts';

const framingTokensPerMessage = 4;
const framingTokensPerPrompt = 3;
/** More than any provider bills one image at its largest detail setting. */
const tokensPerImageBound = 1_600;
/** Providers add a hidden system prompt when tools are offered (Anthropic: up to ~350 tokens). */
const toolUseOverheadBound = 1_000;

const encoder = new TextEncoder();
const bytes = (text: string) => encoder.encode(text).byteLength;

export function worstCaseInputTokens(request: ChatRequest): number {
  let total = framingTokensPerPrompt;
  for (const message of request.messages) {
    total += framingTokensPerMessage + bytes(message.role) + bytes(messageText(message)) + bytes(message.name ?? '');
    if (Array.isArray(message.content)) total += tokensPerImageBound * message.content.filter((part) => part.type !== 'text').length;
    for (const call of message.tool_calls ?? []) total += bytes(call.function.name) + bytes(call.function.arguments);
  }
  if (request.tools !== undefined && request.tools.length > 0) total += toolUseOverheadBound + bytes(JSON.stringify(request.tools));
  return total;
}

export function worstCaseOutputTokens(request: ChatRequest, provider: string): number {
  return request.max_completion_tokens ?? request.max_tokens ?? outputTokenCap(provider, request.model);
}
