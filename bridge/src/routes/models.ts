import { FaucetError } from '../../../workers/shared/wire/errors';
import type { RouteHandler } from '../context';
import { sendJson } from '../http/send';
import { normaliseModels } from '../upstream/normalise-models';
import { upstreamFetch } from '../upstream/upstream-fetch';

export const models: RouteHandler = async ({ response, services }) => {
  const upstream = await services.upstream.resolve();
  const fetchOptions = { timeoutMs: services.upstreamTimeoutMs, apiKey: services.upstreamApiKey };
  let answer: Response;
  try {
    answer = await upstreamFetch(upstream, '/v1/models', fetchOptions);
    // Ollama before its OpenAI layer only lists models at /api/tags.
    if (answer.status === 404 && upstream.kind === 'ollama') answer = await upstreamFetch(upstream, '/api/tags', fetchOptions);
  } catch (error) {
    services.upstream.forget(upstream);
    throw error;
  }
  if (!answer.ok) {
    await answer.body?.cancel();
    throw new FaucetError(
      'upstream_error',
      `The local model server at ${upstream.url} answered HTTP ${answer.status} when asked for its models.`,
    );
  }
  const body = await answer.json().catch(() => {
    throw new FaucetError('upstream_error', `The local model server at ${upstream.url} sent a model list that is not JSON.`);
  });
  sendJson(response, 200, { object: 'list', data: normaliseModels(body, upstream.kind) });
};
