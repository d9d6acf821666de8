/**
 * The fake upstream's Anthropic Messages API (`POST /v1/messages`), shaped like recorded answers: a
 * Message, or the SSE events with their `event:` names (message_start with the input usage, ping,
 * content_block_start/delta/stop, message_delta with the output usage, message_stop). It wants a
 * key (`x-api-key`, or a bearer as Anthropic's SDK sends it), `anthropic-version`, `model`,
 * `max_tokens` and `messages`, as Anthropic does.
 *
 * What it answers:
 * - `thinking` enabled: a thinking block first, its text in `thinking_delta` pieces, then a
 *   `signature_delta` whose signature carries that text and an HMAC of it; with `display: "omitted"`
 *   the block stays empty (billed the same) and only the signature is sent, as Anthropic does;
 * - tools given (and `tool_choice` not `none`, nor a `[fake:tool=none]` marker) and no `tool_result`
 *   in the last user turn: one `tool_use` of the tool a `[fake:tool=NAME]` marker names, else the one
 *   `tool_choice` names, else the first; its input is a `[fake:input=JSON]` marker's, else built from
 *   the tool's schema (each required property: a string is the last word of the user's text, a number
 *   1, a boolean true, an enum its first value, an array empty, an object likewise), stop_reason `tool_use`;
 * - a `tool_result` in the last user turn: `Tool result: <its text>`;
 * - otherwise the chat route's text pieces.
 * Refused with Anthropic's 400 `invalid_request_error`, as Anthropic refuses them: with thinking
 * enabled, a last assistant turn holding `tool_use` that does not start with a thinking block; a
 * thinking block whose signature this fake did not give, or whose text is neither the signed one nor
 * empty (display omitted); a budget not below max_tokens.
 *
 * Usage: the prompt is counted as the chat route counts it (3 tokens a turn plus its text; tools and
 * tool calls as their JSON; images at the model's maximum). With `cache_control` breakpoints, the
 * prompt up to the last one (tools, system, messages, in that order) is a cache write the first time
 * (`cache_creation_input_tokens`) and a read when the same model gets the same prefix again
 * (`cache_read_input_tokens`); `input_tokens` is the rest. No minimum length, no expiry, and only the
 * last breakpoint is looked up. The log's `inputTokens` is the sum of the three, as Faucet books it.
 */
import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { imageTokenBound } from '#shared/providers/provider-catalog.ts';
import {
  acceptCall,
  type Behaviour,
  behaviourOf,
  callIdOf,
  type FakeUpstreamBooks,
  pieces,
  providerTokens,
  refusalStatus,
  sleep,
} from './fake-upstream-kit.ts';

type Block = Record<string, unknown> & { type?: string; cache_control?: unknown };
interface Turn {
  role?: string;
  content?: string | Block[];
}
interface Tool {
  name?: string;
  input_schema?: unknown;
  cache_control?: unknown;
}

export interface MessagesBody {
  model?: string;
  max_tokens?: number;
  stream?: boolean;
  system?: string | Block[];
  messages?: Turn[];
  tools?: Tool[];
  tool_choice?: { type?: string; name?: string };
  thinking?: { type?: string; budget_tokens?: number; display?: string };
}

/** The prompt cache's keys (model and prefix) of one fake upstream. */
export type PromptCache = Set<string>;

/** Not Anthropic's key: signatures only need to show the thinking came back as this fake wrote it. */
const signingKey = 'faucet-fake-anthropic-thinking';
const macOf = (thinking: string) => createHmac('sha256', signingKey).update(thinking).digest('base64');
/** Like Anthropic's, the signature carries the thinking, so a block sent back without its text (display omitted) is still whole. */
const signatureOf = (thinking: string) => `${Buffer.from(thinking).toString('base64')}.${macOf(thinking)}`;
/** The thinking a signature of this fake carries, or null when the fake did not sign it. */
function thinkingSigned(signature: unknown): string | null {
  const [text, mac] = typeof signature === 'string' ? signature.split('.') : [];
  const thinking = Buffer.from(text ?? '', 'base64').toString();
  return mac !== undefined && mac === macOf(thinking) ? thinking : null;
}

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export function sendAnthropicError(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '1' } : {}) });
  response.end(JSON.stringify({ type: 'error', error: { type: errorTypes[status] ?? 'api_error', message } }));
}

const blocksOf = (content: Turn['content']): Block[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];

function textOfBlocks(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Block[]).map((block) => (block.type === 'text' && typeof block.text === 'string' ? block.text : '')).join('');
}

/** What Anthropic would refuse in this request, or null. */
function invalidRequest(body: MessagesBody): string | null {
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens! < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  if (body.thinking?.type !== 'enabled') return null;
  if ((body.thinking.budget_tokens ?? 0) < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (body.thinking.budget_tokens! >= body.max_tokens!) return '`max_tokens` must be greater than `thinking.budget_tokens`.';
  const messages = body.messages;
  for (const [turn, message] of messages.entries()) {
    if (message.role !== 'assistant') continue;
    for (const [index, block] of blocksOf(message.content).entries()) {
      if (block.type !== 'thinking') continue;
      const signed = thinkingSigned(block.signature);
      if (signed === null || (block.thinking !== signed && block.thinking !== ''))
        return `messages.${turn}.content.${index}: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  const last = messages.findLastIndex((message) => message.role === 'assistant');
  const blocks = last < 0 ? [] : blocksOf(messages[last]!.content);
  const first = blocks[0]?.type;
  if (blocks.some((block) => block.type === 'tool_use') && first !== 'thinking' && first !== 'redacted_thinking') {
    return (
      `messages.${last}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first}\`. When \`thinking\` is ` +
      'enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and ' +
      '`tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable ' +
      '`thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking'
    );
  }
  return null;
}

/** The prompt's parts in Anthropic's cache order (tools, system, messages), each with its tokens and whether it is a breakpoint. */
function promptParts(body: MessagesBody): Array<{ content: unknown; tokens: number; breakpoint: boolean }> {
  const imageTokens = imageTokenBound('anthropic', body.model ?? '') ?? 1_600;
  const part = (value: { cache_control?: unknown }, tokens: number) => {
    const { cache_control, ...content } = value;
    return { content, tokens, breakpoint: cache_control !== undefined };
  };
  const blockTokens = (block: Block): number => {
    switch (block.type) {
      case 'text':
        return providerTokens(String(block.text ?? ''));
      case 'image':
        return imageTokens;
      case 'tool_use':
        return providerTokens(String(block.name ?? '')) + providerTokens(JSON.stringify(block.input ?? {}));
      case 'tool_result':
        return providerTokens(textOfBlocks(block.content));
      case 'thinking':
        return providerTokens(String(block.thinking ?? ''));
      default:
        return providerTokens(JSON.stringify(block));
    }
  };
  return [
    ...(body.tools ?? []).map((tool) => part(tool, providerTokens(JSON.stringify(part(tool, 0).content)))),
    ...blocksOf(body.system).map((block) => part(block, blockTokens(block))),
    ...(body.messages ?? []).flatMap((message) => [
      { content: message.role, tokens: 3 + providerTokens(message.role ?? ''), breakpoint: false },
      ...blocksOf(message.content).map((block) => part(block, blockTokens(block))),
    ]),
  ];
}

/** The input usage: the prefix up to the last breakpoint written to or read from the cache, the rest as input. */
function inputUsage(body: MessagesBody, cache: PromptCache) {
  const parts = promptParts(body);
  const total = 3 + parts.reduce((sum, part) => sum + part.tokens, 0);
  const last = parts.findLastIndex((part) => part.breakpoint);
  if (last < 0) return { input_tokens: total, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const prefix = parts.slice(0, last + 1);
  const prefixTokens = 3 + prefix.reduce((sum, part) => sum + part.tokens, 0);
  const key = createHash('sha256')
    .update(JSON.stringify([body.model, prefix.map((part) => part.content)]))
    .digest('hex');
  const read = cache.has(key);
  cache.add(key);
  return {
    input_tokens: total - prefixTokens,
    cache_creation_input_tokens: read ? 0 : prefixTokens,
    cache_read_input_tokens: read ? prefixTokens : 0,
  };
}

/** A value valid against the schema (see the file header). */
function sampleOf(schema: unknown, word: string): unknown {
  const { type, properties = {}, required = [], enum: values } = (schema ?? {}) as Record<string, any>;
  if (Array.isArray(values) && values.length > 0) return values[0];
  if (type === 'object' || (type === undefined && Object.hasOwn(schema ?? {}, 'properties')))
    return Object.fromEntries((required as string[]).map((key) => [key, sampleOf(properties[key], word)]));
  if (type === 'number' || type === 'integer') return 1;
  if (type === 'boolean') return true;
  if (type === 'array') return [];
  return word;
}

/** A `[fake:input=JSON]` marker's input, or null when there is none or it is not a JSON object. */
function inputOf(marker: string | null): string | null {
  try {
    const input = JSON.parse(marker ?? 'null') as unknown;
    return typeof input === 'object' && input !== null && !Array.isArray(input) ? JSON.stringify(input) : null;
  } catch {
    return null;
  }
}

interface PlannedBlock {
  type: 'thinking' | 'text' | 'tool_use';
  /** What is generated, piece by piece, with the output tokens each is billed. */
  pieces: Array<{ value: string; tokens: number }>;
  tool?: { id: string; name: string };
}

const wordsOf = (text: string) => (text.match(/\S+\s*/g) ?? []).map((value) => ({ value, tokens: providerTokens(value) }));

/** The answer's blocks and stop reason (see the file header). */
function plan(body: MessagesBody, behaviour: Behaviour, messageNumber: number): { blocks: PlannedBlock[]; stopReason: string } {
  const messages = body.messages ?? [];
  const lastUser = blocksOf(messages.findLast((message) => message.role === 'user')?.content);
  const result = lastUser.find((block) => block.type === 'tool_result');
  const userText = textOfBlocks(lastUser);
  const tools = body.tools ?? [];
  const named = (name: string | undefined) => tools.find((candidate) => name !== undefined && candidate.name === name);
  const tool =
    result === undefined && body.tool_choice?.type !== 'none' && behaviour.tool !== 'none' && tools.length > 0
      ? (named(behaviour.tool ?? undefined) ?? named(body.tool_choice?.type === 'tool' ? body.tool_choice.name : undefined) ?? tools[0]!)
      : undefined;
  const blocks: PlannedBlock[] = [];
  if (body.thinking?.type === 'enabled' || body.thinking?.type === 'adaptive') {
    const thought =
      result !== undefined
        ? 'The tool answered; I will pass its result on.'
        : tool !== undefined
          ? `The user asked: "${userText.slice(0, 80)}". The ${tool.name} tool answers that, so I will call it.`
          : 'A short answer will do.';
    blocks.push({ type: 'thinking', pieces: wordsOf(thought) });
  }
  if (tool !== undefined) {
    const name = String(tool.name ?? '');
    const input =
      inputOf(behaviour.toolInput) ?? JSON.stringify(sampleOf(tool.input_schema, userText.match(/[\p{L}\p{N}]+/gu)?.at(-1) ?? 'fake'));
    const half = Math.ceil(input.length / 2);
    blocks.push({
      type: 'tool_use',
      tool: { id: `toolu_fake_${messageNumber}`, name },
      pieces: [
        { value: input.slice(0, half), tokens: providerTokens(name) + providerTokens(input.slice(0, half)) },
        { value: input.slice(half), tokens: providerTokens(input.slice(half)) },
      ],
    });
    return { blocks, stopReason: 'tool_use' };
  }
  const text = result !== undefined ? wordsOf(`Tool result: ${textOfBlocks(result.content).trim()}`) : undefined;
  const piece = pieces[behaviour.text];
  blocks.push({
    type: 'text',
    pieces: text ?? Array.from({ length: behaviour.chunks }, () => ({ value: piece, tokens: providerTokens(piece) })),
  });
  return { blocks, stopReason: 'end_turn' };
}

/** Answers one Messages request, logging it in the books like a chat call. */
export async function answerMessages(
  request: IncomingMessage,
  response: ServerResponse,
  body: MessagesBody,
  books: FakeUpstreamBooks,
  cache: PromptCache,
): Promise<void> {
  const callId = callIdOf(request);
  const model = typeof body.model === 'string' ? body.model : '';
  const refuse = (status: number, message: string) => {
    books.refused.push({ callId, api: 'messages', model, status });
    sendAnthropicError(response, status, message);
  };
  if (typeof request.headers['x-api-key'] !== 'string' && !/^Bearer \S/.test(request.headers.authorization ?? ''))
    return refuse(401, 'x-api-key header is required');
  if (typeof request.headers['anthropic-version'] !== 'string') return refuse(400, 'anthropic-version: header is required');
  const invalid = invalidRequest(body);
  if (invalid !== null) return refuse(400, invalid);
  const behaviour = behaviourOf((body.messages ?? []).map((message) => textOfBlocks(blocksOf(message.content))).join('\n'));
  const failure = refusalStatus(behaviour, model, books);
  if (failure !== null) return refuse(failure, 'fake upstream failure');

  const usage = inputUsage(body, cache);
  const accepted = acceptCall(response, books, {
    callId,
    api: 'messages',
    model,
    stream: body.stream === true,
    inputTokens: usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens,
  });
  const { record } = accepted;
  try {
    await sleep(behaviour.delayMs);
    if (accepted.gone()) {
      record.ending = 'client_gone';
      return;
    }
    const id = `msg_fake_${books.answered.length}`;
    const { blocks, stopReason: plannedStop } = plan(body, behaviour, books.answered.length);
    const send = (type: string, data: Record<string, unknown>) => {
      if (record.stream) response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    };
    const message = { id, type: 'message', role: 'assistant', model, content: [] as Block[], stop_reason: null, stop_sequence: null };
    if (record.stream)
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_${id}` });
    send('message_start', { message: { ...message, usage: { ...usage, output_tokens: 1 } } });
    send('ping', {});

    const thinkingShown = body.thinking?.display !== 'omitted';
    let stopReason = plannedStop;
    generation: for (const planned of blocks) {
      const index = message.content.length;
      const block: Block =
        planned.type === 'tool_use'
          ? { type: 'tool_use', id: planned.tool!.id, name: planned.tool!.name, input: {} }
          : planned.type === 'thinking'
            ? { type: 'thinking', thinking: '', signature: '' }
            : { type: 'text', text: '' };
      message.content.push(block);
      send('content_block_start', { index, content_block: { ...block } });
      let json = '';
      let thought = '';
      for (const piece of planned.pieces) {
        if (record.outputTokens + piece.tokens > Number(body.max_tokens)) {
          stopReason = 'max_tokens';
          send('content_block_stop', { index });
          break generation;
        }
        await sleep(behaviour.everyMs);
        if (accepted.gone()) {
          record.ending = 'client_gone';
          return;
        }
        record.outputTokens += piece.tokens;
        if (planned.type === 'thinking') {
          thought += piece.value;
          if (!thinkingShown) continue;
          block.thinking = thought;
          send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece.value } });
        } else if (planned.type === 'text') {
          block.text += piece.value;
          send('content_block_delta', { index, delta: { type: 'text_delta', text: piece.value } });
        } else {
          json += piece.value;
          send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece.value } });
        }
      }
      if (planned.type === 'thinking') {
        block.signature = signatureOf(thought);
        send('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } });
      }
      if (planned.type === 'tool_use') block.input = JSON.parse(json) as unknown;
      send('content_block_stop', { index });
    }
    if (accepted.gone()) {
      record.ending = 'client_gone';
      return;
    }
    if (record.stream) {
      send('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: record.outputTokens } });
      send('message_stop', {});
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${id}` });
    response.end(JSON.stringify({ ...message, stop_reason: stopReason, usage: { ...usage, output_tokens: record.outputTokens } }));
  } finally {
    books.inFlight -= 1;
  }
}
