import { FaucetError } from '../errors.ts';

/** One parsed `data:` event of an OpenAI-style stream (chunk, `faucet.usage`, or an error). */
export interface StreamEvent {
  object?: string;
  faucet?: unknown;
  error?: { code?: unknown; message?: unknown; request_id?: unknown };
  choices?: Array<{ delta?: { content?: string | null } }>;
  /** OpenAI's `include_usage` chunk. */
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

export function parseEvent(data: string): StreamEvent {
  try {
    return JSON.parse(data) as StreamEvent;
  } catch (cause) {
    throw new FaucetError('invalid_response', 'Stream event is not JSON', { cause });
  }
}
