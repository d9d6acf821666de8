/**
 * The most tokens a call can be billed for, which every route holds before it calls the upstream.
 * Input is bounded by UTF-8 bytes (a byte-level BPE token is at least one byte): the text of each
 * message, and the JSON of everything else the provider reads into the prompt (tool calls, tools,
 * legacy functions, tool choice, response schema); each image by its model's bound from the
 * catalog. A part that cannot be bounded is refused with 400. Output is bounded by the request's
 * max tokens or the model's cap.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { imageTokenBound, outputTokenCap } from '#shared/providers/provider-catalog.ts';
import type { PriceCatalog } from '#shared/rating/index.ts';
import { messageText } from '../tokens/count-prompt-tokens.ts';

const framingTokensPerMessage = 4;
const framingTokensPerPrompt = 3;
/**
 * Providers add a hidden system prompt when tools or a response schema are given (Anthropic's tool
 * use prompt is up to ~350 tokens).
 */
const hiddenPromptBound = 1_000;

const encoder = new TextEncoder();
const bytes = (text: string | null | undefined) => (text == null ? 0 : encoder.encode(text).byteLength);
const jsonBytes = (value: unknown) => (value == null ? 0 : bytes(JSON.stringify(value)));

export interface BoundedModel {
  provider: string;
  model: string;
}

export function worstCaseInputTokens(request: ChatRequest, target: BoundedModel): number {
  let total = framingTokensPerPrompt;
  request.messages.forEach((message, index) => {
    total += framingTokensPerMessage + bytes(message.role) + bytes(messageText(message)) + bytes(message.name);
    total += bytes(message.tool_call_id) + bytes(message.refusal) + jsonBytes(message.tool_calls) + jsonBytes(message.function_call);
    total += jsonBytes(message.thinking_blocks);
    if (!Array.isArray(message.content)) return;
    message.content.forEach((part, partIndex) => {
      if (part.type === 'image_url') total += imageBound(target, `messages[${index}].content[${partIndex}]`);
    });
  });
  const tools = [request.tools, request.functions].some((list) => list !== undefined && list.length > 0);
  if (tools || request.response_format?.type === 'json_schema') total += hiddenPromptBound;
  total += jsonBytes(request.tools) + jsonBytes(request.functions) + jsonBytes(request.tool_choice) + jsonBytes(request.function_call);
  total += jsonBytes(request.response_format);
  return total;
}

/** `catalog`: the price catalog the model's cap is looked up through (default: the current one). */
export function worstCaseOutputTokens(request: ChatRequest, provider: string, catalog?: PriceCatalog): number {
  return request.max_completion_tokens ?? request.max_tokens ?? outputTokenCap(provider, request.model, catalog);
}

function imageBound(target: BoundedModel, where: string): number {
  const bound = imageTokenBound(target.provider, target.model);
  if (bound === null) {
    throw new FaucetError('invalid_request', `${where}: image parts cannot be bounded for model "${target.provider}:${target.model}".`);
  }
  return bound;
}
