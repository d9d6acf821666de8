/**
 * OpenAI's `POST /v1/responses` for the fake upstream (fake-openai-upstream.ts), where the gateway's
 * Responses surface goes natively: a text answer of `[fake:chunks=N]` pieces, plain or as the typed
 * events OpenAI streams (`response.created` … `response.completed`, or `.incomplete` at
 * `max_output_tokens`), with the same markers and books as chat completions (fake-upstream-kit.ts).
 * The input is counted as a provider would: instructions, each input item's text, the tools.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { admitOpenAiCall, behaviourOf, type FakeUpstreamBooks, pieces, providerTokens, sleep } from './fake-upstream-kit.ts';

export interface ResponsesBody {
  model?: string;
  stream?: boolean;
  instructions?: string;
  input?: string | Array<{ content?: unknown; output?: unknown; arguments?: unknown }>;
  tools?: unknown;
  max_output_tokens?: number;
}

/** The text of the input, item by item (string content or text parts, tool outputs, call arguments). */
function inputTexts(body: ResponsesBody): string[] {
  if (typeof body.input === 'string') return [body.input];
  return (body.input ?? []).map((item) => {
    if (typeof item.content === 'string') return item.content;
    if (Array.isArray(item.content)) return item.content.map((part: { text?: string }) => part.text ?? '').join('');
    return String(item.output ?? item.arguments ?? '');
  });
}

function inputTokensOf(body: ResponsesBody): number {
  const texts = inputTexts(body);
  let tokens = 3 + providerTokens(body.instructions ?? '');
  for (const text of texts) tokens += 3 + providerTokens(text);
  if (body.tools !== undefined) tokens += providerTokens(JSON.stringify(body.tools));
  return tokens;
}

export async function answerResponses(
  request: IncomingMessage,
  response: ServerResponse,
  body: ResponsesBody,
  books: FakeUpstreamBooks,
): Promise<void> {
  const behaviour = behaviourOf([body.instructions ?? '', ...inputTexts(body)].join('\n'));
  const accepted = admitOpenAiCall(request, response, books, behaviour, {
    api: 'responses',
    model: body.model ?? '',
    stream: body.stream === true,
    inputTokens: inputTokensOf(body),
  });
  if (accepted === null) return;
  const { record } = accepted;
  try {
    await sleep(behaviour.delayMs);
    const limit = body.max_output_tokens ?? 16_384;
    const id = `resp_fake_${books.answered.length}`;
    const itemId = `msg_fake_${books.answered.length}`;
    const createdAt = Math.floor(Date.now() / 1000);
    let text = '';
    let generated = 0;
    let limited = false;
    const nextPiece = (): string | null => {
      if (generated >= behaviour.chunks) return null;
      const piece = pieces[behaviour.text];
      if (record.outputTokens + providerTokens(piece) > limit) {
        limited = true;
        return null;
      }
      record.outputTokens += providerTokens(piece);
      generated += 1;
      text += piece;
      return piece;
    };
    const part = () => ({ type: 'output_text', text, annotations: [], logprobs: [] });
    const item = (status: string, content: unknown[]) => ({ id: itemId, type: 'message', status, role: 'assistant', content });
    const usage = () =>
      behaviour.noUsage
        ? null
        : {
            input_tokens: record.inputTokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: record.outputTokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: record.inputTokens + record.outputTokens,
          };
    const responseObject = (status: string, output: unknown[], final: boolean) => ({
      id,
      object: 'response',
      created_at: createdAt,
      status,
      error: null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      model: record.model,
      output,
      parallel_tool_calls: true,
      store: false,
      temperature: 1,
      tool_choice: 'auto',
      tools: [],
      top_p: 1,
      usage: final ? usage() : null,
    });

    if (!record.stream) {
      while (!accepted.gone() && nextPiece() !== null) await sleep(behaviour.everyMs);
      if (accepted.gone()) {
        record.ending = 'client_gone';
        return;
      }
      const status = limited ? 'incomplete' : 'completed';
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(responseObject(status, [item(status, [part()])], true)));
      return;
    }

    if (accepted.gone()) {
      record.ending = 'client_gone';
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let sequence = 0;
    const send = (type: string, fields: Record<string, unknown>) =>
      response.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
    const location = { item_id: itemId, output_index: 0, content_index: 0 };
    send('response.created', { response: responseObject('in_progress', [], false) });
    send('response.in_progress', { response: responseObject('in_progress', [], false) });
    send('response.output_item.added', { output_index: 0, item: item('in_progress', []) });
    send('response.content_part.added', { ...location, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    for (;;) {
      await sleep(behaviour.everyMs);
      if (accepted.gone()) break;
      const piece = nextPiece();
      if (piece === null) break;
      send('response.output_text.delta', { ...location, delta: piece, logprobs: [] });
    }
    if (accepted.gone()) {
      record.ending = 'client_gone';
      return;
    }
    const status = limited ? 'incomplete' : 'completed';
    send('response.output_text.done', { ...location, text, logprobs: [] });
    send('response.content_part.done', { ...location, part: part() });
    send('response.output_item.done', { output_index: 0, item: item(status, [part()]) });
    send(`response.${status}`, { response: responseObject(status, [item(status, [part()])], true) });
    response.end();
  } finally {
    books.inFlight -= 1;
  }
}
