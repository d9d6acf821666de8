import type { FaucetClient, FeatureResult, RouteMode } from '@faucet/sdk';
import { Store, isAbort, toShownError, type ShownError } from './store.ts';

export interface FeatureState {
  busy: boolean;
  result: FeatureResult | undefined;
  error: ShownError | undefined;
}

export interface FeatureSettings {
  feature: string;
  model?: string;
  routeMode?: RouteMode;
  onSettled?: () => void;
}

/** Parses JSON text; a syntax error becomes a shown error instead of an exception. */
export function parseJsonInput(text: string): { ok: true; value: unknown } | { ok: false; error: ShownError } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (thrown) {
    const detail = thrown instanceof SyntaxError ? thrown.message : 'not JSON';
    return { ok: false, error: { code: 'invalid_json', message: `The input is not valid JSON: ${detail}` } };
  }
}

/** One feature run from JSON input, with its result and usage summary. */
export class FeatureStore extends Store<FeatureState> {
  private controller: AbortController | undefined;

  constructor(
    private readonly client: FaucetClient,
    public settings: FeatureSettings,
  ) {
    super({ busy: false, result: undefined, error: undefined });
  }

  async run(inputJson: string): Promise<void> {
    if (this.getSnapshot().busy) return;
    const parsed = parseJsonInput(inputJson);
    if (!parsed.ok) return this.update({ error: parsed.error, result: undefined });
    this.update({ busy: true, error: undefined, result: undefined });
    this.controller = new AbortController();
    const { feature, model, routeMode } = this.settings;
    try {
      const result = await this.client.runFeature({ feature, model, routeMode, input: parsed.value, signal: this.controller.signal });
      this.update({ result });
    } catch (thrown) {
      if (!isAbort(thrown)) this.update({ error: toShownError(thrown) });
    } finally {
      this.controller = undefined;
      this.update({ busy: false });
      this.settings.onSettled?.();
    }
  }

  cancel(): void {
    this.controller?.abort();
  }
}
