import type { UpstreamKind } from './upstream-kind';

export interface BridgeModel {
  id: string;
  provider: UpstreamKind;
  owned_by?: string;
}

/** OpenAI's `{ data: [{ id, owned_by }] }` or Ollama's `{ models: [{ name }] }`, as one list. */
export function normaliseModels(body: unknown, provider: UpstreamKind): BridgeModel[] {
  const openAi = (body as { data?: unknown })?.data;
  const ollama = (body as { models?: unknown })?.models;
  const entries = Array.isArray(openAi) ? openAi : Array.isArray(ollama) ? ollama : [];
  const models: BridgeModel[] = [];
  for (const entry of entries) {
    const id = (entry as { id?: unknown; name?: unknown; model?: unknown })?.id ?? (entry as { name?: unknown })?.name;
    if (typeof id !== 'string' || id === '') continue;
    const ownedBy = (entry as { owned_by?: unknown }).owned_by;
    models.push(typeof ownedBy === 'string' ? { id, provider, owned_by: ownedBy } : { id, provider });
  }
  return models;
}
