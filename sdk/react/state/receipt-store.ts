import type { FaucetClient, FaucetMetadata, UsageRecord } from '@faucet/sdk';
import { Store, toShownError, type ShownError } from './store.ts';

/**
 * The receipt of one call: what the gateway's `faucet` metadata said at once, and what the server
 * booked for it (`GET /v1/user/usage?request_id=`). Without a request ID it follows the user's
 * latest call. Only call facts are kept: model, tokens, charge, route, request ID — no key or token.
 */
export interface ReceiptState {
  loading: boolean;
  /** The booked record; undefined while the call is not booked (yet). */
  record: UsageRecord | undefined;
  /** True once the server was asked and had no record of the call. */
  notBooked: boolean;
  error: ShownError | undefined;
}

export interface ReceiptTarget {
  requestId?: string;
  faucet?: FaucetMetadata;
}

export class ReceiptStore extends Store<ReceiptState> {
  private generation = 0;

  constructor(private readonly client: FaucetClient) {
    super({ loading: false, record: undefined, notBooked: false, error: undefined });
  }

  /** Loads the booked record of the target (or of the latest call); a newer load wins over an older one. */
  async load(target: ReceiptTarget): Promise<void> {
    const generation = ++this.generation;
    const requestId = target.requestId ?? target.faucet?.request_id;
    this.update({ loading: true });
    try {
      const record = requestId === undefined ? (await this.client.listUsage({ limit: 1 }))[0] : await this.client.getUsageRecord(requestId);
      if (generation === this.generation) this.update({ record, notBooked: record === undefined, error: undefined, loading: false });
    } catch (thrown) {
      if (generation === this.generation) this.update({ error: toShownError(thrown), loading: false });
    }
  }
}
