import { contentLength, usageFrom } from './estimate-tokens';

/**
 * Splits an upstream SSE stream into events so each can be passed on unchanged while the bridge
 * notes the usage chunk (asked for with `stream_options.include_usage`) and counts the generated
 * characters for an estimate. It lets the caller put its own event in front of `data: [DONE]`.
 */
export class SseUsageTap {
  private buffer = '';
  private outputCharacters = 0;
  usage: { input_tokens: number; output_tokens: number } | undefined;
  model: string | undefined;
  sawDone = false;

  /** Feeds upstream text; returns the complete events, each as `{ raw, done }`. */
  push(text: string): Array<{ raw: string; done: boolean }> {
    this.buffer += text;
    const events: Array<{ raw: string; done: boolean }> = [];
    for (;;) {
      const match = /\r?\n\r?\n/.exec(this.buffer);
      if (!match) break;
      const raw = this.buffer.slice(0, match.index + match[0].length);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      events.push({ raw, done: this.inspect(raw) });
    }
    return events;
  }

  /** Whatever is left when the upstream ends without a final blank line. */
  flush(): Array<{ raw: string; done: boolean }> {
    if (this.buffer.trim() === '') return [];
    const raw = this.buffer + '\n\n';
    this.buffer = '';
    return [{ raw, done: this.inspect(raw) }];
  }

  get generatedCharacters(): number {
    return this.outputCharacters;
  }

  private inspect(raw: string): boolean {
    const data = raw
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data === '[DONE]') {
      this.sawDone = true;
      return true;
    }
    if (data === '') return false;
    let chunk: { model?: unknown; usage?: unknown; choices?: unknown };
    try {
      chunk = JSON.parse(data);
    } catch {
      return false;
    }
    if (typeof chunk.model === 'string') this.model = chunk.model;
    this.usage = usageFrom(chunk.usage) ?? this.usage;
    if (Array.isArray(chunk.choices)) {
      for (const choice of chunk.choices) this.outputCharacters += contentLength((choice as { delta?: { content?: unknown } })?.delta?.content);
    }
    return false;
  }
}
