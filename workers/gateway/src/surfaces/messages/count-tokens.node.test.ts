import { describe, expect, it } from 'vitest';
import { countPromptTokens } from '../../tokens/count-prompt-tokens.ts';
import { chatRequestOfMessages } from './chat-request-of-messages.ts';
import { countMessagesTokens } from './count-tokens.ts';
import { parseCountTokensRequest, parseMessagesRequest } from './messages-request.ts';

const prompt = {
  model: 'claude-sonnet-4-5',
  system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
  tools: [{ name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
  messages: [
    { role: 'user', content: 'read a.txt' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'a long chain of thought that Anthropic leaves out of later turns', signature: 's' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello world' },
        { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
      ],
    },
  ],
};

describe('count_tokens', () => {
  it('counts the prompt the call would send, with the tokenizer the hold is sized from', () => {
    const chat = chatRequestOfMessages(parseMessagesRequest({ ...prompt, max_tokens: 100 }));
    const { input_tokens } = countMessagesTokens(parseCountTokensRequest(prompt));
    expect(input_tokens).toBe(countPromptTokens(chat.messages, chat.tools));
    expect(input_tokens).toBeGreaterThan(765);
  });

  it('grows with the prompt and with the tools', () => {
    const short = countMessagesTokens(parseCountTokensRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).input_tokens;
    const longer = countMessagesTokens(
      parseCountTokensRequest({ model: 'm', messages: [{ role: 'user', content: 'hi there, how are you today?' }] }),
    ).input_tokens;
    const withTools = countMessagesTokens(
      parseCountTokensRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: prompt.tools }),
    ).input_tokens;
    expect(longer).toBeGreaterThan(short);
    expect(withTools).toBeGreaterThan(short);
  });
});
