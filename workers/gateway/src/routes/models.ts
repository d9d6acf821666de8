/** `GET /v1/models`: the `provider:model` names the platform route can price, in OpenAI's list shape. */
import type { ServiceApp } from '#shared/app.ts';
import { currentPriceCatalog } from '#shared/rating/index.ts';

export function registerModels(app: ServiceApp): void {
  app.get('/v1/models', (c) =>
    c.json({
      object: 'list',
      data: [...currentPriceCatalog.prices.keys()].map((id) => ({
        id,
        object: 'model',
        created: 0,
        owned_by: id.slice(0, id.indexOf(':')),
      })),
    }),
  );
}
