/**
 * The gateway's routes in its OpenAPI document. The handlers read the body themselves (an OpenAI
 * request passes unknown fields through, and the answer may be a stream), so the paths are
 * registered from the same zod schemas rather than through `app.openapi()`.
 */
import { z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { errorResponses } from '#shared/openapi.ts';
import { faucetObjectSchema } from '#shared/wire/faucet-object.ts';
import { chatCompletionSchema } from '../openai/chat-schemas.ts';
import { chatCompletionsBodySchema } from './chat-completions-body.ts';
import { modelListSchema } from './models.ts';

export function registerGatewayOpenApi(app: ServiceApp): void {
  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'OpenAI-compatible chat completion, metered and booked (stream: true answers with SSE)',
    security: [{ sessionToken: [] }],
    request: { body: { required: true, content: { 'application/json': { schema: chatCompletionsBodySchema } } } },
    responses: {
      200: {
        description:
          'The completion plus the `faucet` object; with `stream: true`, `text/event-stream` whose last event before `[DONE]` carries it',
        content: {
          'application/json': { schema: chatCompletionSchema.extend({ faucet: faucetObjectSchema }) },
          'text/event-stream': { schema: z.string() },
        },
      },
      ...errorResponses(400, 401, 402, 409, 413, 429, 502, 504),
    },
  });
  // The surfaces that translate another API to the pipeline: their bodies are that API's own
  // (docs/surfaces.md says what each accepts and refuses), checked by the handlers.
  const theirOwn = (api: string) =>
    z.looseObject({}).openapi({ description: `The ${api} request, plus Faucet's optional \`feature\` and \`route_mode\`` });
  for (const [path, summary, api, statuses] of [
    [
      '/v1/responses',
      'OpenAI Responses API, metered and booked (stream: true answers with its typed events)',
      'OpenAI Responses',
      [400, 401, 402, 409, 413, 429, 502, 503, 504],
    ],
    [
      '/v1/messages',
      'Anthropic Messages API (x-api-key or Bearer session token; anthropic-version required); errors in Anthropic’s envelope',
      'Anthropic Messages',
      [400, 401, 402, 409, 413, 429, 502, 503, 504],
    ],
    [
      '/v1/messages/count_tokens',
      'The input tokens of a Messages request, counted by the gateway; charges nothing',
      'Anthropic count_tokens',
      [400, 401],
    ],
    [
      '/v1/embeddings',
      'OpenAI embeddings for catalog-priced embedding models; one call per request, billed per input token',
      'OpenAI embeddings',
      [400, 401, 402, 409, 413, 429, 502, 503, 504],
    ],
  ] as const) {
    app.openAPIRegistry.registerPath({
      method: 'post',
      path,
      summary,
      security: [{ sessionToken: [] }],
      request: { body: { required: true, content: { 'application/json': { schema: theirOwn(api) } } } },
      responses: {
        200: {
          description: 'The API’s own answer plus the `faucet` object (on a stream, on its final event)',
          content: {
            'application/json': { schema: z.looseObject({ faucet: faucetObjectSchema }) },
            'text/event-stream': { schema: z.string() },
          },
        },
        ...errorResponses(...statuses),
      },
    });
  }
  app.openAPIRegistry.registerPath({
    method: 'get',
    path: '/v1/models',
    summary:
      'Every routable provider:model with its retail price per million tokens (after markup), context window, features and the APIs that serve it (`surfaces`)',
    responses: {
      200: {
        description: 'OpenAI list of models with OpenRouter-style details',
        content: { 'application/json': { schema: modelListSchema } },
      },
    },
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'sessionToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'fvs_… session token',
  });
}
