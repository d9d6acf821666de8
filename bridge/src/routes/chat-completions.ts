import { FaucetError } from '../../../workers/shared/wire/errors';
import type { RouteHandler } from '../context';
import { isPlainObject, readJsonBody } from '../http/read-json-body';
import { sendJson } from '../http/send';
import { estimateInputTokens, estimateTextTokens, contentLength, usageFrom, type TokenCounts } from '../upstream/estimate-tokens';
import { mapUpstreamFailure } from '../upstream/map-upstream-failure';
import { upstreamFetch } from '../upstream/upstream-fetch';
import type { Upstream } from '../upstream/upstream-kind';
import { pipeEventStream } from '../upstream/pipe-event-stream';

/** Fields of Faucet's gateway dialect that a local server does not know. */
const faucetOnlyFields = ['feature', 'route_mode'];

export interface LocalUsage extends TokenCounts {
  request_id: string;
  route_mode: 'local';
  provider: Upstream['kind'];
  model: string;
}

/**
 * OpenAI-compatible chat proxied to the local model server. The answer carries a `faucet` object
 * (as the gateway's does) with the token counts the SDK puts in its usage report — from the
 * server's `usage` when it sends one, otherwise estimated and marked so.
 */
export const chatCompletions: RouteHandler = async ({ request, response, requestId, services }) => {
  const body = await readJsonBody(request, services.limits.chatBodyBytes);
  if (
    !isPlainObject(body) ||
    typeof body.model !== 'string' ||
    body.model === '' ||
    !Array.isArray(body.messages) ||
    body.messages.length === 0
  ) {
    throw new FaucetError('invalid_request', 'A chat request needs `model` (a string) and `messages` (a non-empty array).');
  }
  const forwarded: Record<string, unknown> = { ...body };
  for (const field of faucetOnlyFields) delete forwarded[field];
  const streaming = body.stream === true;
  if (streaming) {
    const given = isPlainObject(body.stream_options) ? body.stream_options : {};
    forwarded.stream_options = { ...given, include_usage: true };
  }

  const upstream = await services.upstream.resolve();
  const abort = new AbortController();
  response.once('close', () => abort.abort());
  let answer: Response;
  try {
    answer = await upstreamFetch(upstream, '/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify(forwarded),
      signal: abort.signal,
      timeoutMs: services.upstreamTimeoutMs,
      apiKey: services.upstreamApiKey,
    });
  } catch (error) {
    if (FaucetError.isInstance(error) && error.code === 'upstream_error') services.upstream.forget(upstream);
    throw error;
  }
  if (!answer.ok) throw await mapUpstreamFailure(upstream, answer);

  const inputEstimate = () => estimateInputTokens(body.messages);
  const usageFor = (model: string | undefined, counts: TokenCounts): LocalUsage => ({
    request_id: requestId,
    route_mode: 'local',
    provider: upstream.kind,
    model: model ?? (body.model as string),
    ...counts,
  });

  if (streaming && (answer.headers.get('content-type') ?? '').includes('text/event-stream')) {
    await pipeEventStream(answer, response, requestId, (tap) =>
      usageFor(
        tap.model,
        tap.usage
          ? { ...tap.usage, estimated: false }
          : { input_tokens: inputEstimate(), output_tokens: estimateTextTokens(tap.generatedCharacters), estimated: true },
      ),
    );
    return;
  }

  const completion = (await answer.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!isPlainObject(completion))
    throw new FaucetError('upstream_error', `The local model server at ${upstream.url} sent an answer that is not JSON.`);
  const reported = usageFrom(completion.usage);
  const counts: TokenCounts = reported
    ? { ...reported, estimated: false }
    : { input_tokens: inputEstimate(), output_tokens: estimateTextTokens(outputCharacters(completion.choices)), estimated: true };
  sendJson(response, 200, { ...completion, faucet: usageFor(typeof completion.model === 'string' ? completion.model : undefined, counts) });
};

function outputCharacters(choices: unknown): number {
  if (!Array.isArray(choices)) return 0;
  return choices.reduce<number>((sum, choice) => sum + contentLength((choice as { message?: { content?: unknown } })?.message?.content), 0);
}
