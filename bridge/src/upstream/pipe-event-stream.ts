import type { ServerResponse } from 'node:http';
import { errorEnvelope } from '../../../workers/shared/wire/errors';
import { SseUsageTap } from './sse-usage-tap';

/**
 * Passes the upstream's SSE events through as they complete. Right before `data: [DONE]` (or at
 * the end, if the server sends none) it adds `{"object":"faucet.usage","choices":[],"faucet":{…}}`,
 * shaped like the gateway's (empty `choices`, so OpenAI clients that read `choices[0]?.delta`
 * step over it). A stream cut short ends with an error event in the envelope's shape.
 */
export async function pipeEventStream(
  answer: Response,
  response: ServerResponse,
  requestId: string,
  usageOf: (tap: SseUsageTap) => { model: string },
): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  const tap = new SseUsageTap();
  const usageEvent = () => {
    const faucet = usageOf(tap);
    const event = {
      id: requestId,
      object: 'faucet.usage',
      created: Math.floor(Date.now() / 1000),
      model: faucet.model,
      choices: [],
      faucet,
    };
    return `data: ${JSON.stringify(event)}\n\n`;
  };
  const write = (events: Array<{ raw: string; done: boolean }>) => {
    for (const event of events) response.write(event.done ? usageEvent() + event.raw : event.raw);
  };
  const decoder = new TextDecoder();
  try {
    for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) {
      if (response.destroyed) return;
      write(tap.push(decoder.decode(chunk, { stream: true })));
    }
    write(tap.push(decoder.decode()));
    write(tap.flush());
    if (!tap.sawDone) response.write(usageEvent());
  } catch {
    if (response.destroyed) return;
    const envelope = errorEnvelope('upstream_error', 'The local model server closed the stream before it finished.', requestId);
    response.write(`data: ${JSON.stringify(envelope)}\n\n`);
  }
  response.end();
}
