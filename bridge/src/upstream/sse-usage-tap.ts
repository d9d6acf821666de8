import { SseDecoder } from '../../../workers/shared/wire/sse';
import { contentLength, usageFrom } from './estimate-tokens';

/**
 * Splits an upstream SSE stream into events so each can be passed on unchanged while the bridge
 * notes the usage chunk (asked for with `stream_options.include_usage`) and counts the generated
 * characters for an estimate. It lets the caller put its own event in front of `data: [DONE]`.
 */
export class SseUsageTap {
  private readonly decoder = new SseDecoder();
  private outputCharacters = 0;
  usage: { input_tokens: number; output_tokens: number } | undefined;
  model: string | undefined;
  sawDone = false;

  /** Feeds upstream text; returns the complete events, each as `{ raw, done }`. */
  push(text: string): Array<{ raw: string; done: boolean }> {
    return this.decoder.push(text).map(({ event, raw }) => ({ raw, done: this.inspect(event.data) }));
  }

  /** Whatever is left when the upstream ends without a final blank line, completed and passed on. */
  flush(): Array<{ raw: string; done: boolean }> {
    const rest = this.decoder.rest();
    if (rest.trim() === '') return [];
    return this.decoder.push(rest.endsWith('\n') ? '\n' : '\n\n').map(({ event, raw }) => ({ raw, done: this.inspect(event.data) }));
  }

  get generatedCharacters(): number {
    return this.outputCharacters;
  }

  private inspect(data: string): boolean {
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
      for (const choice of chunk.choices)
        this.outputCharacters += contentLength((choice as { delta?: { content?: unknown } })?.delta?.content);
    }
    return false;
  }
}
