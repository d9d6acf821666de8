/**
 * A Responses call answered natively (OpenAI, Azure: providers/openai-compatible/responses-native.ts):
 * the upstream's own events, as the metered stream passed them through (each chat chunk carries its
 * event), sent on unchanged but numbered in this stream's order. The final `response.completed` (or
 * `.incomplete`) is held until the metered stream has settled the call, then sent with the `faucet`
 * object on its response. A call cut by its quota (docs/quota.md) never gets the upstream's final
 * event: it ends with `response.incomplete` for `max_output_tokens`, its output as streamed so far.
 */
import type { FaucetObject } from '../../metering/faucet-object.ts';
import { responsesUsageOf } from './responses-response.ts';
import { errorEventOf, responseErrorOf, type StreamFailure } from './responses-stream.ts';

type Event = { type: string; sequence_number?: number } & Record<string, unknown>;
type Item = { type?: string; content?: Array<Record<string, unknown>>; arguments?: string } & Record<string, unknown>;

const terminal = new Set(['response.completed', 'response.incomplete']);

export class NativeResponsesRelay {
  private sequence = 0;
  /** The response as the upstream last described it (`response.created`, `.in_progress`). */
  private response: Record<string, unknown> = {};
  /** The output as streamed so far, by output index: what a cut answer's final response holds. */
  private readonly output = new Map<number, Item>();
  private held: Event | null = null;
  private ended = false;

  /** One upstream event: what to send for it now. */
  push(event: Event): Event[] {
    if (this.ended) return [];
    this.follow(event);
    if (terminal.has(event.type)) {
      this.held = event;
      return [];
    }
    return [this.number(event)];
  }

  /** The metered stream ended and settled: the held final event with the `faucet` object, or, cut, `response.incomplete`. */
  finish(faucet?: FaucetObject): Event[] {
    if (this.ended) return [];
    this.ended = true;
    if (this.held !== null) {
      const response = this.held.response as Record<string, unknown>;
      return [this.number({ ...this.held, response: { ...response, ...(faucet === undefined ? {} : { faucet }) } })];
    }
    const response = this.snapshot('incomplete', {
      incomplete_details: { reason: 'max_output_tokens' },
      usage: responsesUsageOf(null, faucet) ?? null,
      ...(faucet === undefined ? {} : { faucet }),
    });
    return [this.number({ type: 'response.incomplete', response })];
  }

  /** The upstream failed mid-stream (or the call reached its deadline): `response.failed`, then `error`. */
  fail(failure: StreamFailure, faucet?: FaucetObject): Event[] {
    if (this.ended) return [];
    this.ended = true;
    const response = this.snapshot('failed', {
      error: responseErrorOf(failure),
      usage: responsesUsageOf(null, faucet) ?? null,
      ...(faucet === undefined ? {} : { faucet }),
    });
    return [this.number({ type: 'response.failed', response }), this.number(errorEventOf(failure))];
  }

  /** Keeps the response and its output as the events describe them. */
  private follow(event: Event): void {
    if (typeof event.response === 'object' && event.response !== null) this.response = event.response as Record<string, unknown>;
    const index = typeof event.output_index === 'number' ? event.output_index : -1;
    const item = this.output.get(index);
    switch (event.type) {
      case 'response.output_item.added':
      case 'response.output_item.done':
        this.output.set(index, structuredClone(event.item as Item));
        break;
      case 'response.content_part.added':
        item?.content?.push(structuredClone(event.part as Record<string, unknown>));
        break;
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const part = item?.content?.[event.content_index as number];
        const field = event.type === 'response.output_text.delta' ? 'text' : 'refusal';
        if (part !== undefined) part[field] = String(part[field] ?? '') + String(event.delta ?? '');
        break;
      }
      case 'response.function_call_arguments.delta':
        if (item !== undefined) item.arguments = (item.arguments ?? '') + String(event.delta ?? '');
        break;
    }
  }

  private snapshot(status: string, fields: Record<string, unknown>): Record<string, unknown> {
    const output = [...this.output.entries()]
      .sort(([left], [right]) => left - right)
      .map(([, item]) => (item.status === 'in_progress' ? { ...item, status: 'incomplete' } : item));
    return { ...this.response, status, output, ...fields };
  }

  private number(event: Event): Event {
    return { ...event, sequence_number: this.sequence++ };
  }
}
