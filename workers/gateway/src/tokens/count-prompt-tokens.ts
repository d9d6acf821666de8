import type { ChatMessage } from '../openai/chat-schemas.ts';
import { countTokens } from './tokenize.ts';

/** Per-message framing tokens and the reply primer, as OpenAI's chat format adds them. */
const tokensPerMessage = 3;
const tokensForReplyPrimer = 3;
/** An image part is priced by the provider from its pixels; this is a high-detail 512×512 tile's worth. */
const tokensPerImage = 765;

/** The text a message contributes to the prompt (text parts only; other parts counted separately). */
export function messageText(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  if (!Array.isArray(message.content)) return '';
  return message.content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** Counts a chat prompt with the deterministic tokenizer, tools and tool calls included. */
export function countPromptTokens(messages: ChatMessage[], tools?: unknown[]): number {
  let total = tokensForReplyPrimer;
  for (const message of messages) {
    total += tokensPerMessage + countTokens(message.role) + countTokens(messageText(message));
    if (message.name !== undefined) total += countTokens(message.name);
    if (Array.isArray(message.content)) {
      total += tokensPerImage * message.content.filter((part) => part.type !== 'text').length;
    }
    for (const call of message.tool_calls ?? []) {
      total += countTokens(call.function.name) + countTokens(call.function.arguments);
    }
  }
  if (tools !== undefined && tools.length > 0) total += countTokens(JSON.stringify(tools));
  return total;
}
