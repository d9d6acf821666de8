/**
 * The stream's side of holds that grow with the answer (docs/quota.md): it counts the output seen
 * (UTF-8 bytes, a bound of the tokens), asks the wallet object for the next quota step ahead of need
 * (`QUOTA_ASK_AHEAD_TOKENS` before the usable grant), and holds the stream back only when the grant is
 * used up while a step is still being decided. A refused step cuts the answer: `onCut` stops the
 * upstream at once, and the metered stream ends the answer with `finish_reason: "length"`.
 */
import { asksNext, nextGrant, type QuotaRefusal, type QuotaSettings, usableTokens } from '#shared/authorize/quota-steps.ts';
import type { WalletQuotaAnswer } from '#shared/durable-objects.ts';

/** Why the answer was cut: a step refused for the balance, a spend limit or a key's budget; or no step could be had. */
export type QuotaCutReason = QuotaRefusal | 'quota_unavailable';

export interface QuotaOptions {
  /** Output tokens the call was first held for. */
  granted: number;
  /** Its whole output bound (max tokens, within the feature's cap): no step goes beyond it. */
  worst: number;
  settings: QuotaSettings;
  /** Asks the wallet object to grow the call's hold to this many output tokens. */
  extend(outputTokens: number): Promise<WalletQuotaAnswer>;
}

export class QuotaMeter {
  /** Output tokens the hold covers now. */
  granted: number;
  /** Steps granted so far (the benchmark counts them). */
  steps = 0;
  private asking: Promise<void> | null = null;
  private refused: QuotaCutReason | null = null;
  private seen = 0;

  constructor(
    private readonly options: QuotaOptions,
    private readonly onCut: (reason: QuotaCutReason) => void,
  ) {
    this.granted = options.granted;
  }

  /** `seen` output bytes have passed: asks for the next step when near the edge; cuts when past it and refused. */
  observe(seen: number): void {
    this.seen = seen;
    if (this.refused !== null) {
      if (seen > this.usable()) this.onCut(this.refused);
      return;
    }
    if (
      this.asking === null &&
      this.granted < this.options.worst &&
      asksNext(seen, this.granted, this.options.worst, this.options.settings)
    ) {
      this.ask();
    }
  }

  /** Before more output is read: null to go on, or why the answer ends. Waits only while the grant is used up. */
  async admit(): Promise<QuotaCutReason | null> {
    while (this.seen > this.usable()) {
      if (this.refused !== null) return this.refused;
      if (this.asking === null) this.ask();
      await this.asking;
    }
    return null;
  }

  /**
   * The output a call cut now is billed at without the provider's count: what was seen plus one step
   * (what the provider may have produced between its last chunk and the abort), within the whole
   * bound. Never above the grant, which is at least a step beyond what may pass, unless a burst went past it.
   */
  billedOutput(): number {
    return Math.min(this.options.worst, this.seen + this.options.settings.stepTokens);
  }

  private usable(): number {
    return usableTokens(this.granted, this.options.worst, this.options.settings);
  }

  private ask(): void {
    const target = nextGrant(this.seen, this.granted, this.options.worst, this.options.settings);
    this.asking = this.options
      .extend(target)
      .then(
        (answer) => {
          if (answer.outcome === 'granted') {
            this.granted = Math.max(this.granted, target);
            this.steps += 1;
          } else {
            this.refused = answer.outcome === 'refused' && answer.code !== 'not_in_flight' ? answer.code : 'quota_unavailable';
          }
        },
        () => {
          this.refused = 'quota_unavailable';
        },
      )
      .finally(() => {
        this.asking = null;
        // Refused while the stream was already past the usable grant: stop the upstream now, not at the next read.
        if (this.refused !== null && this.seen > this.usable()) this.onCut(this.refused);
      });
  }
}
