/**
 * Translation's own cost per call on the new surfaces (docs/surfaces.md: translated, not passed
 * through): a Claude Code-sized Messages request (about 140 KB: a long system prompt, tools, a tool
 * loop with signed thinking, cache breakpoints) read, turned into the chat request and into the
 * request the anthropic adapter sends; a Responses request the same way; and an answer's stream
 * events translated back. The reference, in the same run, is what any gateway does to such a body at
 * least: parse it and write it out again (JSON.parse + JSON.stringify).
 */
import { chatRequestOfMessages } from '../../workers/gateway/src/surfaces/messages/chat-request-of-messages.ts';
import { parseMessagesRequest } from '../../workers/gateway/src/surfaces/messages/messages-request.ts';
import { MessagesStreamTranslator } from '../../workers/gateway/src/surfaces/messages/messages-stream.ts';
import { chatRequestOfResponses } from '../../workers/gateway/src/surfaces/responses/chat-request-of-responses.ts';
import { parseResponsesBody } from '../../workers/gateway/src/surfaces/responses/responses-request.ts';
import { requestForProtocol } from '../../workers/gateway/src/providers/accepted-fields.ts';
import { toAnthropicRequest } from '../../workers/gateway/src/providers/anthropic/to-anthropic-request.ts';
import type { ChatCompletionChunk, ChatRequest } from '../../workers/gateway/src/openai/chat-schemas.ts';

const ROUNDS = 7;

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

/** Microseconds per run of `work`, the median of ROUNDS rounds of `perRound` runs. */
function microseconds(perRound: number, work: () => unknown): number {
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    for (let index = 0; index < perRound; index++) work();
    rounds.push(((performance.now() - started) * 1000) / perRound);
  }
  return median(rounds);
}

const paragraph = 'You are Claude Code, an interactive CLI tool that helps users with software engineering tasks. ';
const tool = (index: number) => ({
  name: `Tool${index}`,
  description: paragraph.repeat(6),
  input_schema: { type: 'object', properties: { path: { type: 'string', description: paragraph } }, required: ['path'] },
});

/** About 140 KB, shaped as Claude Code's second request of a tool loop. */
function claudeCodeBody(): Record<string, unknown> {
  const signature = 'E'.repeat(400);
  return {
    model: 'anthropic:claude-sonnet-4-5',
    max_tokens: 32_000,
    stream: true,
    thinking: { type: 'enabled', budget_tokens: 31_999 },
    metadata: { user_id: '{"session":"bench"}' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    system: [
      { type: 'text', text: paragraph },
      { type: 'text', text: paragraph.repeat(800), cache_control: { type: 'ephemeral' } },
    ],
    tools: Array.from({ length: 20 }, (_, index) => tool(index)),
    messages: [
      { role: 'user', content: [{ type: 'text', text: paragraph.repeat(200) }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: paragraph.repeat(20), signature },
          { type: 'tool_use', id: 'toolu_1', name: 'Tool1', input: { path: 'src/index.ts' } },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: paragraph.repeat(300), cache_control: { type: 'ephemeral' } }],
      },
    ],
  };
}

function responsesBody(): Record<string, unknown> {
  return {
    model: 'openai:gpt-4o-mini',
    instructions: paragraph.repeat(800),
    input: [
      { role: 'user', content: paragraph.repeat(200) },
      { type: 'function_call', call_id: 'call_1', name: 'read', arguments: '{"path":"a.txt"}' },
      { type: 'function_call_output', call_id: 'call_1', output: paragraph.repeat(300) },
    ],
    tools: Array.from({ length: 20 }, (_, index) => ({
      type: 'function',
      name: `tool${index}`,
      description: paragraph.repeat(6),
      parameters: { type: 'object', properties: {} },
    })),
    max_output_tokens: 4000,
  };
}

/** The request as an adapter gets it: without Faucet's own fields, the model without its provider. */
function bare(request: ChatRequest & { feature?: string; route_mode?: string }): ChatRequest {
  const { feature: _feature, route_mode: _route, ...rest } = request;
  return { ...rest, model: rest.model.slice(rest.model.indexOf(':') + 1) };
}

const chunk = (delta: ChatCompletionChunk['choices'][number]['delta']): ChatCompletionChunk => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'claude-sonnet-4-5',
  choices: [{ index: 0, delta, finish_reason: null }],
});

export async function runSurfaceTranslationBench(): Promise<void> {
  const messagesText = JSON.stringify(claudeCodeBody());
  const responsesText = JSON.stringify(responsesBody());
  const reference = (text: string) => () => JSON.stringify(JSON.parse(text));
  const messages = () => {
    const chat = chatRequestOfMessages(parseMessagesRequest(JSON.parse(messagesText)));
    return JSON.stringify(toAnthropicRequest(requestForProtocol('anthropic', bare(chat)), 4096));
  };
  const responses = () => JSON.stringify(bare(chatRequestOfResponses(parseResponsesBody(JSON.parse(responsesText)))));
  const events = Array.from({ length: 500 }, (_, index) => chunk(index < 100 ? { reasoning_content: 'think ' } : { content: 'word ' }));
  const stream = () => {
    const translator = new MessagesStreamTranslator({ callId: 'call_bench' });
    let sent = 0;
    for (const each of events) sent += translator.chunk(each).length;
    return sent + translator.done().length;
  };

  const rows: Array<[string, number, number]> = [
    [
      `Messages request (${(messagesText.length / 1024).toFixed(0)} KB) → chat → Anthropic`,
      microseconds(200, messages),
      microseconds(200, reference(messagesText)),
    ],
    [
      `Responses request (${(responsesText.length / 1024).toFixed(0)} KB) → chat`,
      microseconds(200, responses),
      microseconds(200, reference(responsesText)),
    ],
  ];
  for (const [name, translated, parsed] of rows) {
    console.log(
      `${name.padEnd(52)} ${translated.toFixed(0).padStart(6)} µs per call, ${(translated / parsed).toFixed(2)}× a parse + write of the body (${parsed.toFixed(0)} µs)`,
    );
  }
  const perEvent = microseconds(200, stream) / events.length;
  console.log(`${'Messages stream events (chat chunk → Anthropic event)'.padEnd(52)} ${perEvent.toFixed(2).padStart(6)} µs per event`);
}
