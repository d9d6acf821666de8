/**
 * Circuit breaking per upstream (provider + base URL): after `failures` consecutive failures of an
 * upstream (connect error, timeout before the first byte, 5xx; not a 429, which says "slow down",
 * nor a 4xx, the caller's fault) its circuit opens for `cooldownMs`, and calls skip it (their
 * attempt reads `skipped_circuit_open`). Once the cooldown has passed, one call probes it (half
 * open): an answer closes the circuit, a failure opens it for another cooldown.
 *
 * The state lives in the isolate's memory, not in a Durable Object: it only steers which upstream
 * is tried first, never money (a skipped candidate is not billed, a wrong guess costs one failed
 * attempt), and a shared store would put a round trip in front of every call to save each isolate
 * its own `failures` failed attempts. Each isolate learns of a dead upstream by itself.
 */
export interface CircuitSettings {
  failures: number;
  cooldownMs: number;
}

interface Circuit {
  consecutiveFailures: number;
  /** Set while open: calls skip it until then. */
  openUntil: number | null;
  /** Half open: a probe is out, others skip it until the probe ends. */
  probing: boolean;
}

export class CircuitBreaker {
  readonly #circuits = new Map<string, Circuit>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Whether a call may try this upstream now; true for a half-open probe, which the caller must end with `succeeded` or `failed`. */
  admit(upstream: string): boolean {
    const circuit = this.#circuits.get(upstream);
    if (circuit?.openUntil == null) return true;
    if (this.#now() < circuit.openUntil || circuit.probing) return false;
    circuit.probing = true;
    return true;
  }

  succeeded(upstream: string): void {
    this.#circuits.delete(upstream);
  }

  failed(upstream: string, settings: CircuitSettings): void {
    const circuit = this.#circuits.get(upstream) ?? { consecutiveFailures: 0, openUntil: null, probing: false };
    circuit.consecutiveFailures += 1;
    if (circuit.probing || circuit.consecutiveFailures >= settings.failures) circuit.openUntil = this.#now() + settings.cooldownMs;
    circuit.probing = false;
    this.#circuits.set(upstream, circuit);
  }

  /** An attempt that ended without telling anything about the upstream (a 429, a 4xx, the client gone): a probe is given back. */
  inconclusive(upstream: string): void {
    const circuit = this.#circuits.get(upstream);
    if (circuit) circuit.probing = false;
  }
}

/** The isolate's breaker. */
export const circuitBreaker = new CircuitBreaker();
