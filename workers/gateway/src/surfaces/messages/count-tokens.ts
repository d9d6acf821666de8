/**
 * `POST /v1/messages/count_tokens`: the prompt as the gateway would send it (the same translation as
 * a Messages call), counted with the gateway's own tokenizer, the count its holds are sized from.
 * For the mock provider it is exact; for a real provider an estimate, as Anthropic's own count is.
 */
import { countPromptTokens } from '../../tokens/count-prompt-tokens.ts';
import { chatMessagesOfMessages, chatToolsOf } from './chat-request-of-messages.ts';
import type { CountTokensRequest } from './messages-request.ts';

export function countMessagesTokens(body: CountTokensRequest): { input_tokens: number } {
  return { input_tokens: countPromptTokens(chatMessagesOfMessages(body), chatToolsOf(body.tools)) };
}
