import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { toAnthropicRequest } from '../../providers/anthropic/to-anthropic-request.ts';
import { chatCompletionsBodySchema } from '../../routes/chat-completions-body.ts';
import { chatRequestOfMessages } from './chat-request-of-messages.ts';
import { type MessagesRequest, parseCountTokensRequest, parseMessagesRequest } from './messages-request.ts';
import { requestForProtocol } from '../../providers/accepted-fields.ts';

/** What Claude Code 2.1.197 sends, in shape (issue 32): thinking, cache_control, context_management, metadata.user_id. */
const claudeCodeBody = {
  model: 'claude-opus-4-8',
  max_tokens: 32000,
  stream: true,
  thinking: { type: 'enabled', budget_tokens: 31999 },
  context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
  metadata: { user_id: JSON.stringify({ device_id: 'abc', session_id: 'def' }) },
  system: [
    { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
    { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
  ],
  tools: [
    {
      name: 'Read',
      description: 'Reads a file',
      input_schema: { type: 'object' as const, properties: { file_path: { type: 'string' } }, required: ['file_path'] },
    },
  ],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'read a.txt', cache_control: { type: 'ephemeral' } }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should read it.', signature: 'sig' },
        { type: 'text', text: 'Reading.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a.txt' } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: [{ type: 'text', text: 'hello' }],
          cache_control: { type: 'ephemeral', ttl: '1h' },
        },
      ],
    },
  ],
};

function translated(body: unknown) {
  return chatRequestOfMessages(parseMessagesRequest(body));
}

function refusal(body: unknown): string {
  try {
    parseMessagesRequest(body);
  } catch (error) {
    if (FaucetError.isInstance(error) && error.code === 'invalid_request') return error.message;
    throw error;
  }
  throw new Error('the body was accepted');
}

const minimal = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe('a Messages request becomes a chat request', () => {
  it("accepts Claude Code's body and maps it to what the chat-completions schema accepts", () => {
    const request = translated(claudeCodeBody);
    expect(chatCompletionsBodySchema.parse(request)).toEqual(request);
    expect(request).toEqual({
      model: 'claude-opus-4-8',
      max_completion_tokens: 32000,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 31999 },
      tools: [
        {
          type: 'function',
          function: {
            name: 'Read',
            description: 'Reads a file',
            parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
          },
        },
      ],
      messages: [
        // Cache breakpoints stay on their blocks, so the system prompt and the turn stay parts.
        {
          role: 'system',
          content: [
            { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
            { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'read a.txt', cache_control: { type: 'ephemeral' } }] },
        {
          role: 'assistant',
          content: 'Reading.',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a.txt"}' } }],
          thinking_blocks: [{ type: 'thinking', thinking: 'I should read it.', signature: 'sig' }],
        },
        {
          role: 'tool',
          tool_call_id: 'toolu_1',
          content: [{ type: 'text', text: 'hello', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        },
      ],
    });
  });

  it('leaves a deferred tool (Claude Code 2.1.332’s tool search) out of what the model is shown, as Anthropic does', () => {
    const placeholder = { name: 'DeferredToolPlaceholder', input_schema: { type: 'object', properties: {} }, defer_loading: true };
    const request = translated({ ...minimal, tools: [...claudeCodeBody.tools, placeholder] });
    expect(request.tools?.map((tool) => tool.function.name)).toEqual(['Read']);
    expect(translated({ ...minimal, tools: [placeholder] }).tools).toBeUndefined();
    const shown = translated({ ...minimal, tools: [{ ...placeholder, defer_loading: false }] });
    expect(shown.tools?.map((tool) => tool.function.name)).toEqual(['DeferredToolPlaceholder']);
  });

  it.each([
    [
      { type: 'enabled', budget_tokens: 31999, display: 'omitted' },
      { type: 'enabled', budget_tokens: 31999, display: 'omitted' },
    ],
    [
      { type: 'enabled', budget_tokens: 31999, display: 'summarized' },
      { type: 'enabled', budget_tokens: 31999, display: 'summarized' },
    ],
    // Progress updates need a beta the gateway does not send upstream: the reasoning stays hidden as asked.
    [
      { type: 'enabled', budget_tokens: 31999, display: 'updates' },
      { type: 'enabled', budget_tokens: 31999, display: 'omitted' },
    ],
    [
      { type: 'adaptive', display: 'updates' },
      { type: 'adaptive', display: 'omitted' },
    ],
  ])('sends thinking %j on as %j (display changes what is shown, not what is billed)', (thinking, sent) => {
    const request = translated({ ...minimal, max_tokens: 32000, thinking });
    expect(request.thinking).toEqual(sent);
    expect(chatCompletionsBodySchema.parse(request)).toEqual(request);
  });

  it('maps sampling, stop sequences and Faucet’s own fields', () => {
    const request = translated({
      ...minimal,
      temperature: 0.5,
      top_p: 0.9,
      stop_sequences: ['END'],
      feature: 'chat',
      route_mode: 'platform',
      service_tier: 'standard_only',
    });
    expect(request).toEqual({
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['END'],
      feature: 'chat',
      route_mode: 'platform',
    });
    expect(chatCompletionsBodySchema.parse(request)).toEqual(request);
  });

  it.each([
    [{ type: 'auto' }, { tool_choice: 'auto' }],
    [
      { type: 'auto', disable_parallel_tool_use: true },
      { tool_choice: 'auto', parallel_tool_calls: false },
    ],
    [{ type: 'any' }, { tool_choice: 'required' }],
    [{ type: 'tool', name: 'Read' }, { tool_choice: { type: 'function', function: { name: 'Read' } } }],
    [{ type: 'none' }, { tool_choice: 'none' }],
  ])('maps tool_choice %j', (choice, expected) => {
    const request = translated({ ...minimal, tools: claudeCodeBody.tools, tool_choice: choice });
    expect(request).toMatchObject(expected);
    if (!('parallel_tool_calls' in expected)) expect(request.parallel_tool_calls).toBeUndefined();
  });

  it.each([
    [{ type: 'enabled', budget_tokens: 1024 }, undefined, 'low'],
    [{ type: 'enabled', budget_tokens: 8000 }, undefined, 'medium'],
    [{ type: 'enabled', budget_tokens: 16384 }, undefined, 'high'],
    [{ type: 'adaptive' }, undefined, 'medium'],
    [{ type: 'disabled' }, undefined, undefined],
    [{ type: 'enabled', budget_tokens: 2000 }, { effort: 'max' }, 'xhigh'],
    [undefined, { effort: 'low' }, 'low'],
  ])(
    'maps thinking %j with output_config %j to reasoning_effort %s for a provider other than Anthropic',
    (thinking, outputConfig, effort) => {
      const {
        feature: _feature,
        route_mode: _route,
        ...request
      } = translated({ ...minimal, max_tokens: 32000, thinking, output_config: outputConfig });
      expect(requestForProtocol('openai_compatible', request).reasoning_effort).toBe(effort);
    },
  );

  it('maps images, text documents and the images a tool returned', () => {
    const request = translated({
      ...minimal,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
            { type: 'document', title: 'Notes', source: { type: 'text', media_type: 'text/plain', data: 'the notes' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'Shot', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              is_error: false,
              content: [
                { type: 'text', text: 'a screenshot' },
                { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'BBBB' } },
              ],
            },
            { type: 'text', text: 'what is in it?' },
          ],
        },
      ],
    });
    expect(request.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          { type: 'text', text: 'Notes' },
          { type: 'text', text: 'the notes' },
        ],
      },
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_2', type: 'function', function: { name: 'Shot', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'a screenshot' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is in it?' },
          { type: 'text', text: 'Images returned by tool call toolu_2:' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,BBBB' } },
        ],
      },
    ]);
    expect(chatCompletionsBodySchema.parse(request)).toEqual(request);
  });

  it('marks a failed tool result as an error, since chat has no is_error', () => {
    const request = translated({
      ...minimal,
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'Run', input: { cmd: 'ls' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', is_error: true, content: 'no such file' }] },
      ],
    });
    expect(request.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 't', content: 'Error: no such file' });
  });

  it('keeps an assistant turn that held only thinking, as its thinking blocks', () => {
    const request = translated({
      ...minimal,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'xyz' }] },
        { role: 'user', content: 'b' },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'user', content: 'a' },
      { role: 'assistant', content: null, thinking_blocks: [{ type: 'redacted_thinking', data: 'xyz' }] },
      { role: 'user', content: 'b' },
    ]);
  });

  it('is the mirror image of the anthropic adapter: a request translated there and back is the same request', () => {
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 500,
      system: 'Be brief.',
      temperature: 0.2,
      stop_sequences: ['END'],
      tools: claudeCodeBody.tools,
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'read a.txt' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Reading.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a.txt' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello' }] },
      ],
    } satisfies MessagesRequest;
    expect(toAnthropicRequest(translated(body), 4096)).toEqual({
      ...body,
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
    });
  });
});

describe('what cannot be honoured is refused with a 400 naming it', () => {
  it.each([
    ['max_tokens missing', { model: 'm', messages: minimal.messages }, 'max_tokens is required'],
    ['top_k', { ...minimal, top_k: 5 }, 'field "top_k" is not accepted: the gateway translates to a chat request'],
    ['an unknown field', { ...minimal, frequency_penalty: 1 }, 'field "frequency_penalty" is not accepted'],
    ['mcp_servers', { ...minimal, mcp_servers: [] }, 'field "mcp_servers" is not accepted: MCP connector calls'],
    ['container', { ...minimal, container: 'c' }, 'field "container" is not accepted: code execution containers are billed per hour'],
    ['inference_geo', { ...minimal, inference_geo: 'us' }, 'field "inference_geo" is not accepted: region-pinned inference is priced'],
    ['more than 4 stop sequences', { ...minimal, stop_sequences: ['a', 'b', 'c', 'd', 'e'] }, 'at most 4 stop_sequences'],
    ['a temperature above 1', { ...minimal, temperature: 1.5 }, 'temperature'],
    ['a thinking budget below 1024', { ...minimal, thinking: { type: 'enabled', budget_tokens: 100 } }, 'thinking.budget_tokens'],
    ['an unknown thinking display', { ...minimal, thinking: { type: 'adaptive', display: 'full' } }, 'thinking.display'],
    [
      'tool use examples',
      { ...minimal, tools: [{ ...claudeCodeBody.tools[0], input_examples: [{ file_path: 'a.txt' }] }] },
      'field "input_examples" is not accepted',
    ],
    [
      'a tool_reference that would load a deferred tool',
      {
        ...minimal,
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'tool_reference', tool_name: 'Read' }] }] },
        ],
      },
      'a tool_result part of type "tool_reference" is not accepted',
    ],
    [
      'the web search server tool',
      { ...minimal, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] },
      'tools.0: tool type "web_search_20250305" is not served',
    ],
    ['the bash tool', { ...minimal, tools: [{ type: 'bash_20250124', name: 'bash' }] }, 'tool type "bash_20250124" is not served'],
    [
      'the computer tool',
      { ...minimal, tools: [{ type: 'computer_20250124', name: 'computer', display_width_px: 1, display_height_px: 1 }] },
      'tool type "computer_20250124" is not served',
    ],
    ['a custom tool without input_schema', { ...minimal, tools: [{ name: 'a' }] }, 'tools.0'],
    [
      'a server_tool_use block',
      { ...minimal, messages: [{ role: 'assistant', content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }] }] },
      'a content block of type "server_tool_use" is not accepted: server tools',
    ],
    [
      'a PDF document',
      {
        ...minimal,
        messages: [
          { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' } }] },
        ],
      },
      'a document source of type "base64" is not accepted: PDF documents cannot be bounded',
    ],
    [
      'an uploaded file',
      { ...minimal, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_1' } }] }] },
      'an image source of type "file" is not accepted: files uploaded to the Files API',
    ],
    [
      'a document with citations enabled',
      {
        ...minimal,
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', citations: { enabled: true }, source: { type: 'text', media_type: 'text/plain', data: 'x' } }],
          },
        ],
      },
      'citations cannot be returned',
    ],
    [
      'clearing tool uses',
      { ...minimal, context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } },
      'only clear_thinking edits are accepted',
    ],
    [
      'a search_result inside a tool_result',
      {
        ...minimal,
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'search_result', source: 's' }] }] },
        ],
      },
      'block 0.content: block 0.type: a tool_result part of type "search_result" is not accepted',
    ],
    ['a system role in messages', { ...minimal, messages: [{ role: 'system', content: 'x' }] }, 'messages.0.role'],
  ])('%s', (_name, body, message) => {
    expect(refusal(body)).toContain(message);
  });

  it('refuses blocks in the wrong turn instead of dropping them', () => {
    const toolUseFromUser = parseMessagesRequest({
      ...minimal,
      messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'x', input: {} }] }],
    });
    expect(() => chatRequestOfMessages(toolUseFromUser)).toThrow(
      'messages[0].content[0]: a "tool_use" block belongs in an assistant message.',
    );
    const imageFromAssistant = parseMessagesRequest({
      ...minimal,
      messages: [{ role: 'assistant', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }],
    });
    expect(() => chatRequestOfMessages(imageFromAssistant)).toThrow(
      'an assistant message carries text, tool_use and thinking blocks, not "image"',
    );
  });

  it('takes no generation settings on count_tokens', () => {
    expect(() => parseCountTokensRequest({ ...minimal })).toThrow('field "max_tokens" is not accepted');
    expect(parseCountTokensRequest({ model: 'm', messages: minimal.messages })).toEqual({ model: 'm', messages: minimal.messages });
  });
});
