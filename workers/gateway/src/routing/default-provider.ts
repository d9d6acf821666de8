/**
 * Bare model names: an unmodified OpenAI client sends `gpt-4o-mini`, not `openai:gpt-4o-mini`. A
 * name without a provider goes to the provider that makes the model, by the explicit prefix table
 * below (first match wins); the call then runs exactly as `provider:model` would, and its faucet
 * object names the provider it resolved to. Per-feature aliases (`fast`, `smart`) are not here.
 */
const defaultProviders: ReadonlyArray<[RegExp, string]> = [
  [/^(gpt-|chatgpt-|o\d(-|$))/, 'openai'],
  [/^claude-/, 'anthropic'],
  [/^(gemini-|gemma-)/, 'google'],
  [/^(mistral-|open-mistral-|ministral-|codestral-|pixtral-|magistral-|devstral-|voxtral-)/, 'mistral'],
  [/^deepseek-/, 'deepseek'],
  [/^grok-/, 'xai'],
  // The demo stack's local model.
  [/^echo$/, 'mock'],
];

/** The provider a bare model name defaults to; undefined when the table names none. */
export function defaultProvider(model: string): string | undefined {
  return defaultProviders.find(([pattern]) => pattern.test(model))?.[1];
}
