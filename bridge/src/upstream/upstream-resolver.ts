import { FaucetError } from '../../../workers/shared/wire/errors';
import { failureReason } from './upstream-fetch';
import type { DetectCandidate, Upstream } from './upstream-kind';

export interface Probe {
  reachable: boolean;
  reason?: string;
}

/** Asks a server for its model list; any 2xx answer means an OpenAI-compatible server is there. */
export async function probeUpstream(upstream: Upstream, timeoutMs: number, apiKey?: string): Promise<Probe> {
  try {
    const response = await fetch(`${upstream.url}/v1/models`, {
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return response.ok ? { reachable: true } : { reachable: false, reason: `answered HTTP ${response.status} to GET /v1/models` };
  } catch (error) {
    return { reachable: false, reason: failureReason(error) };
  }
}

/**
 * Finds the upstream: the one given with --upstream, or the first local model server that
 * answers on its default port. A detected server is remembered until a call to it fails;
 * "none found" is never remembered, so starting Ollama after the bridge just works.
 */
export class UpstreamResolver {
  private detected: Upstream | undefined;

  constructor(private readonly options: { explicit?: Upstream; candidates: DetectCandidate[]; probeTimeoutMs: number; apiKey?: string }) {}

  get explicit(): Upstream | undefined {
    return this.options.explicit;
  }

  async resolve(): Promise<Upstream> {
    if (this.options.explicit) return this.options.explicit;
    if (this.detected) return this.detected;
    const probes = await Promise.all(
      this.options.candidates.map((candidate) => probeUpstream(candidate, this.options.probeTimeoutMs, this.options.apiKey)),
    );
    const found = this.options.candidates.find((_, index) => probes[index]!.reachable);
    if (!found) {
      const tried = this.options.candidates.map((candidate) => candidate.hint).join('; ');
      throw new FaucetError('upstream_error', `No local model server found. Start one of: ${tried}. Or pass --upstream URL.`);
    }
    this.detected = { url: found.url, kind: found.kind };
    return this.detected;
  }

  /** Called when the detected server stopped answering, so the next call looks again. */
  forget(upstream: Upstream): void {
    if (this.detected?.url === upstream.url) this.detected = undefined;
  }
}
