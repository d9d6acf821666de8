/**
 * The token classes of one model call: what a provider adapter reports and what rating prices.
 * Every class a provider bills at its own rate is its own field, so no class hides inside another.
 *
 * The classes are disjoint, and add up to the call's whole count:
 *   all input  = input + cachedInput + cacheWrite + cacheWrite1h + audioInput
 *   all output = output + audioOutput
 * except `reasoning`, which is the part of `output` the model spent thinking (providers bill it as
 * output; it is kept apart so a catalog that prices it differently can, and so it can be shown).
 *
 * How each provider's own usage maps onto these classes is decided in its adapter
 * (workers/gateway/src/providers/**), in one place per provider.
 */
export interface TokenUsage {
  /** Input billed at the plain input price: text (and images), neither read from nor written to the prompt cache. */
  input: number;
  /** Input read from the provider's prompt cache (cache hits), whatever its modality. */
  cachedInput: number;
  /**
   * Input written to the prompt cache for its default lifetime (Anthropic's five-minute writes:
   * `cache_creation_input_tokens` less the one-hour part), billed above the input price.
   */
  cacheWrite: number;
  /** Input written to the prompt cache for one hour (Anthropic's `ephemeral_1h_input_tokens`), billed above a five-minute write. */
  cacheWrite1h: number;
  /** Audio input not read from the cache. */
  audioInput: number;
  /** Output other than audio, reasoning included. */
  output: number;
  /** The part of `output` spent on reasoning; informational unless a catalog prices it apart. */
  reasoning: number;
  /** Audio output. */
  audioOutput: number;
}

/** A usage with the given classes and every other class at zero. */
export function tokenUsage(classes: Partial<TokenUsage>): TokenUsage {
  return { input: 0, cachedInput: 0, cacheWrite: 0, cacheWrite1h: 0, audioInput: 0, output: 0, reasoning: 0, audioOutput: 0, ...classes };
}

/** Every input token, whatever its class (what OpenAI calls `prompt_tokens`). */
export function totalInputTokens(usage: TokenUsage): number {
  return usage.input + usage.cachedInput + usage.cacheWrite + usage.cacheWrite1h + usage.audioInput;
}

/** Every output token, reasoning and audio included (what OpenAI calls `completion_tokens`). */
export function totalOutputTokens(usage: TokenUsage): number {
  return usage.output + usage.audioOutput;
}
