const encoder = new TextEncoder();

/** One `data:` event carrying a JSON value, as OpenAI streams it. */
export function formatSseJson(value: unknown): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(value)}\n\n`);
}

/** The terminator OpenAI clients wait for. */
export function formatSseDone(): Uint8Array {
  return encoder.encode('data: [DONE]\n\n');
}

/** A named event, as Anthropic streams them (used by tests that play an Anthropic upstream). */
export function formatSseEvent(event: string, value: unknown): Uint8Array {
  return encoder.encode(`event: ${event}\ndata: ${JSON.stringify(value)}\n\n`);
}

export const sseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
} as const;
