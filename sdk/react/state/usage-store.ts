import type { FaucetClient, UsageRecord, Wallet } from '@faucet/sdk';
import { Store, toShownError, type ShownError } from './store.ts';

export interface UsageState {
  loading: boolean;
  wallet: Wallet | undefined;
  usage: UsageRecord[];
  error: ShownError | undefined;
}

/** The user's wallet and recent usage; `refresh` reloads both, a newer refresh wins over an older one. */
export class UsageStore extends Store<UsageState> {
  private generation = 0;

  constructor(
    private readonly client: FaucetClient,
    private readonly limit: number,
  ) {
    super({ loading: false, wallet: undefined, usage: [], error: undefined });
  }

  async refresh(): Promise<void> {
    const generation = ++this.generation;
    this.update({ loading: true });
    try {
      const [wallet, usage] = await Promise.all([this.client.getWallet(), this.client.listUsage({ limit: this.limit })]);
      if (generation === this.generation) this.update({ wallet, usage, error: undefined, loading: false });
    } catch (thrown) {
      if (generation === this.generation) this.update({ error: toShownError(thrown), loading: false });
    }
  }
}
