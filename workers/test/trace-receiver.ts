/**
 * The tests' OTLP and webhook receivers: the test worker's traces consumer sends through `traceReceiver.fetch`
 * (its webhooks consumer through `webhookReceiver.fetch`),
 * which a test points at a fake endpoint (fake-upstream.ts). Tests and the test worker's handlers run
 * in one isolate, so what a test sets here is what the consumer uses.
 */
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

const refuseUnexpected: FetchFunction = async () => new Response('no receiver set', { status: 503 });

export const traceReceiver: { fetch: FetchFunction } = { fetch: refuseUnexpected };

/** The tests' webhook endpoint: the webhooks consumer sends through it. */
export const webhookReceiver: { fetch: FetchFunction } = { fetch: refuseUnexpected };
