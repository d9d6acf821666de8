import { FaucetError } from './errors.ts';
import type { ChatInput, ChatMessage } from './types.ts';

/** Turns the accepted input shapes into OpenAI chat messages. */
export function toMessages(input: ChatInput): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const messages = Array.isArray(input) ? input : input?.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new FaucetError('invalid_request', 'input must be a string, a non-empty list of messages or { messages }');
  }
  return messages;
}

/**
 * A feature's input: text, messages, or any JSON value — the last is sent as one user message
 * holding its JSON, so a feature's prompt template on the server sees structured input verbatim.
 */
export function featureInputToMessages(input: unknown): ChatMessage[] {
  if (typeof input === 'string') return toMessages(input);
  if (Array.isArray(input) && input.length > 0 && input.every(isMessage)) return input;
  if (isMessagesObject(input)) return toMessages(input);
  if (input === undefined) throw new FaucetError('invalid_request', 'input is required');
  return [{ role: 'user', content: JSON.stringify(input) }];
}

function isMessage(value: unknown): value is ChatMessage {
  const message = value as Partial<ChatMessage> | null;
  return typeof message === 'object' && message !== null && typeof message.role === 'string' && typeof message.content === 'string';
}

function isMessagesObject(value: unknown): value is { messages: ChatMessage[] } {
  return typeof value === 'object' && value !== null && Array.isArray((value as { messages?: unknown }).messages);
}

/** The text of the first choice of a completion. */
export function completionText(completion: { choices?: Array<{ message?: { content?: string | null } }> }): string {
  return completion.choices?.[0]?.message?.content ?? '';
}
