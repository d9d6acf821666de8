/**
 * OpenAI's Responses API as it answers (the shapes of its recorded events and response objects), for
 * the tests of the Responses surface sent natively: a reasoning item with its summary, then a message.
 */

export const upstreamUsage = {
  input_tokens: 30,
  input_tokens_details: { cached_tokens: 10 },
  output_tokens: 20,
  output_tokens_details: { reasoning_tokens: 5 },
  total_tokens: 50,
};

const reasoningItem = (summary: string) => ({
  id: 'rs_upstream_1',
  type: 'reasoning',
  summary: summary === '' ? [] : [{ type: 'summary_text', text: summary }],
});

const messageItem = (status: string, text: string | null) => ({
  id: 'msg_upstream_1',
  type: 'message',
  status,
  role: 'assistant',
  content: text === null ? [] : [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});

/** A response object of the upstream's, as `response.created` (no output) or finished. */
export function upstreamResponse(status: 'in_progress' | 'completed' | 'incomplete', model = 'gpt-4o-mini-2024-07-18') {
  const done = status !== 'in_progress';
  return {
    id: 'resp_upstream_1',
    object: 'response',
    created_at: 1_790_000_000,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model,
    output: done ? [reasoningItem('Thinking.'), messageItem(status, 'Hello there.')] : [],
    store: false,
    usage: done ? upstreamUsage : null,
  };
}

/** The events of that answer, streamed, numbered as OpenAI numbers them. */
export function upstreamEvents(options: { model?: string; failAfterCreated?: boolean } = {}): Array<Record<string, unknown>> {
  const location = { item_id: 'msg_upstream_1', output_index: 1, content_index: 0 };
  const events: Array<Record<string, unknown>> = [{ type: 'response.created', response: upstreamResponse('in_progress', options.model) }];
  if (options.failAfterCreated) {
    events.push({ type: 'error', code: 'server_error', message: 'The server had an error.', param: null });
  } else {
    events.push(
      { type: 'response.in_progress', response: upstreamResponse('in_progress', options.model) },
      { type: 'response.output_item.added', output_index: 0, item: reasoningItem('') },
      {
        type: 'response.reasoning_summary_part.added',
        item_id: 'rs_upstream_1',
        output_index: 0,
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      },
      { type: 'response.reasoning_summary_text.delta', item_id: 'rs_upstream_1', output_index: 0, summary_index: 0, delta: 'Thinking.' },
      { type: 'response.reasoning_summary_text.done', item_id: 'rs_upstream_1', output_index: 0, summary_index: 0, text: 'Thinking.' },
      { type: 'response.output_item.done', output_index: 0, item: reasoningItem('Thinking.') },
      { type: 'response.output_item.added', output_index: 1, item: messageItem('in_progress', null) },
      { type: 'response.content_part.added', ...location, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } },
      { type: 'response.output_text.delta', ...location, delta: 'Hello', logprobs: [] },
      { type: 'response.output_text.delta', ...location, delta: ' there.', logprobs: [] },
      { type: 'response.output_text.done', ...location, text: 'Hello there.', logprobs: [] },
      {
        type: 'response.content_part.done',
        ...location,
        part: { type: 'output_text', text: 'Hello there.', annotations: [], logprobs: [] },
      },
      { type: 'response.output_item.done', output_index: 1, item: messageItem('completed', 'Hello there.') },
      { type: 'response.completed', response: upstreamResponse('completed', options.model) },
    );
  }
  return events.map((event, index) => ({ ...event, sequence_number: index }));
}

/** Those events as the upstream sends them: `event:` and `data:` lines. */
export function upstreamSse(events: Array<Record<string, unknown>>): string[] {
  return events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
}
