import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../../test/support/fake-upstream';
import { startTestBridge } from '../../test/support/start-test-bridge';
import { parseUpstreamUrl } from '../upstream/upstream-kind';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

/** The official OpenAI client pointed at the bridge, the way apps without the Faucet SDK use it. */
describe('an OpenAI client pointed at the bridge', () => {
  it('lists models, chats and streams, stepping over the faucet.usage event', async () => {
    const upstream = await startFakeUpstream();
    const bridge = await startTestBridge({ upstream: parseUpstreamUrl(upstream.url, 'llamacpp') });
    cleanup.push(upstream.close, () => bridge.close());
    const client = new OpenAI({ baseURL: `${bridge.url}/v1`, apiKey: 'unused', maxRetries: 0 });

    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['llama3.2:3b', 'qwen2.5:0.5b']);

    const completion = await client.chat.completions.create({ model: 'llama3.2:3b', messages: [{ role: 'user', content: 'Hi' }] });
    expect(completion.choices[0]!.message.content).toBe('Hello from the fake.');

    const stream = await client.chat.completions.create({
      model: 'llama3.2:3b',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    let text = '';
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('Hello from the fake.');
    expect(usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 5 });
  });

  it('raises the bridge error for an upstream that is down', async () => {
    const bridge = await startTestBridge({ upstream: parseUpstreamUrl('http://127.0.0.1:9', 'ollama') });
    cleanup.push(() => bridge.close());
    const client = new OpenAI({ baseURL: `${bridge.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] })).rejects.toMatchObject({
      status: 502,
    });
  });
});
