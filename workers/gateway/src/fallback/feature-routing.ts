/**
 * A call's candidates (docs/models.md, "Fallback and aliases"): the model it asked for — or the
 * target of its feature's alias — then the feature's fallback models, in order.
 *
 * The gateway needs the feature's aliases and fallbacks before it authorizes (the hold covers every
 * candidate), but reads the feature only in the one authorize statement. So it uses what it last saw
 * for this session and feature (kept in the isolate for a minute), or none at first; the statement
 * compares that with the feature's and, when they differ, writes nothing and answers the feature's
 * current ones (`routing_changed`), and the gateway asks once more. A feature without aliases and
 * fallbacks is one statement, as before; a change reaches the next call of every isolate.
 */
import { isAliasName } from '#shared/apps/model-routing.ts';
import { parseModel, type ModelReference } from '../routing/parse-model.ts';

export interface FeatureRouting {
  aliases: Record<string, string>;
  fallbacks: string[];
}

export interface Candidates {
  /** The alias the call's model named, or null. */
  alias: string | null;
  /** Null only while the alias's target is not known yet (the statement then answers it). */
  primary: ModelReference | null;
  fallbacks: ModelReference[];
  /** The fallbacks as the feature lists them, for the statement's comparison. */
  fallbackNames: string[];
}

/** `routing` null: not known yet (assumed none; the statement tells otherwise). */
export function resolveCandidates(model: string, routing: FeatureRouting | null): Candidates {
  const fallbackNames = routing?.fallbacks ?? [];
  const fallbacks = fallbackNames.map(parseModel);
  if (isAliasName(model)) {
    if (routing === null) return { alias: model, primary: null, fallbacks, fallbackNames };
    const target = routing.aliases[model];
    if (target !== undefined) return { alias: model, primary: parseModel(target), fallbacks, fallbackNames };
  }
  return { alias: null, primary: parseModel(model), fallbacks, fallbackNames };
}

const ttlMs = 60_000;
const maxEntries = 10_000;

/** What the isolate last saw of a feature's routing, keyed by session token hash and feature (or none: the default). */
export class RoutingCache {
  readonly #entries = new Map<string, { routing: FeatureRouting; until: number }>();

  get(tokenHash: string, featureKey: string | undefined): FeatureRouting | null {
    const key = `${tokenHash}\u0000${featureKey ?? ''}`;
    const entry = this.#entries.get(key);
    if (entry === undefined) return null;
    if (entry.until < Date.now()) {
      this.#entries.delete(key);
      return null;
    }
    return entry.routing;
  }

  set(tokenHash: string, featureKey: string | undefined, routing: FeatureRouting): void {
    if (this.#entries.size >= maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(`${tokenHash}\u0000${featureKey ?? ''}`, { routing, until: Date.now() + ttlMs });
  }
}

export const routingCache = new RoutingCache();
