/**
 * Which of the gateway's model APIs serve a model, named after their paths: `chat.completions`
 * (`POST /v1/chat/completions`), `responses`, `messages` (with `messages/count_tokens`) and
 * `embeddings`. Every chat model serves the three chat surfaces (Responses and Messages are
 * translated to chat); an embedding model serves embeddings only. `GET /v1/models` lists these; the
 * embeddings route refuses by the same predicate (embeddingModelRefusal), so its list and its
 * refusals cannot disagree.
 */
import { isProviderName } from '#shared/providers/provider-catalog.ts';
import { embeddingModelRefusal, isEmbeddingModelName } from './embeddings/embedding-models.ts';

export const modelSurfaces = ['chat.completions', 'responses', 'messages', 'embeddings'] as const;

type ModelSurface = (typeof modelSurfaces)[number];

const chatSurfaces: ModelSurface[] = ['chat.completions', 'responses', 'messages'];

/**
 * The surfaces that serve `provider:model`, in the order of `modelSurfaces`: none for a provider
 * Faucet does not route; all four for `mock:echo`, the local stack's chat and embedding model.
 */
export function surfacesOf(provider: string, model: string): ModelSurface[] {
  if (!isProviderName(provider)) return [];
  const surfaces: ModelSurface[] = isEmbeddingModelName(model) ? [] : [...chatSurfaces];
  if (embeddingModelRefusal(provider, model) === null) surfaces.push('embeddings');
  return surfaces;
}
