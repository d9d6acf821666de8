/**
 * Token estimates for local model servers that report no usage (the bridge and the SDK): about four
 * characters per token (the usual rule of thumb for English with BPE vocabularies) plus OpenAI's
 * per-message framing. The local route bills only an open fee per call, so these counts are
 * informational; a report built from them says `estimated: true`. (The cloud gateway never
 * estimates downward: without a provider count it bills upper bounds, docs/money.md.)
 */
const charactersPerToken = 4;
const tokensPerMessage = 4;
const tokensPerReply = 2;

export function estimateTextTokens(characters: number): number {
  return Math.ceil(characters / charactersPerToken);
}

export function estimateInputTokens(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let tokens = tokensPerReply;
  for (const message of messages) {
    tokens += tokensPerMessage + estimateTextTokens(contentLength((message as { content?: unknown })?.content));
  }
  return tokens;
}

/** Characters of text in a message content: a string or an array of `{ type: 'text', text }` parts. */
export function contentLength(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let length = 0;
  for (const part of content) {
    const text = (part as { text?: unknown })?.text;
    if (typeof text === 'string') length += text.length;
  }
  return length;
}
