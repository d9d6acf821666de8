/**
 * The session's context as a wallet object knows it (`faucet_lease_context`, lease-statements.ts),
 * cached per (session, feature, model, route) for `freshMs`, refreshed in the background up to
 * `staleMs`, and read again after that: a developer's suspension or an app's archive takes effect
 * within seconds; a revoked session at once when the API pushes it, else within the same bound. A
 * push bumps a generation counter, so a read that started before it is not kept. Also whether a
 * wallet is an end user's (remembered once it matched).
 */
import type { WalletCallRequest } from '#shared/durable-objects.ts';
import { walletName } from '#shared/auth/session-token.ts';
import { type CallContext, fetchCallContext } from './lease-statements.ts';
import type { LeaseSync } from './lease-sync.ts';
import type { WalletState } from './wallet-state.ts';

/** Context answers are used as they are for this long... */
const freshMs = 2_000;
/** ...and, refreshed in the background, until this age; older ones are read again before the call. */
const staleMs = 10_000;

interface CachedContext {
  row: CallContext;
  fetchedAt: number;
  refreshing: boolean;
}

export class ContextCache {
  private readonly contexts = new Map<string, CachedContext>();
  /** Bumped by every pushed revocation: a context read that started before one is not kept. */
  private generation = 0;
  /** `endUserId/wallet` pairs checked to match (walletName is a pure function of the two and the secret). */
  private readonly verifiedOwners = new Set<string>();

  constructor(
    private readonly state: WalletState,
    private readonly leases: LeaseSync,
  ) {}

  /**
   * The call's context. Read with the lease in one statement when it has to be read anyway and the
   * lease falls short (`leaseNeed` not null; `budgetNeed`: the call's worst case on a developer key).
   */
  async get(request: WalletCallRequest, leaseNeed: bigint | null, budgetNeed: bigint): Promise<CallContext> {
    const key = JSON.stringify([request.tokenHash, request.featureKey, request.provider, request.model, request.alias, request.fallbacks]);
    const cached = this.contexts.get(key);
    const age = cached === undefined ? Number.POSITIVE_INFINITY : Date.now() - cached.fetchedAt;
    if (cached !== undefined && age < staleMs) {
      if (age >= freshMs && !cached.refreshing) {
        cached.refreshing = true;
        void this.fetchContext(request)
          .then((row) => this.contexts.set(key, { row, fetchedAt: Date.now(), refreshing: false }))
          .catch(() => {
            cached.refreshing = false;
          });
      }
      return cached.row;
    }
    const row = leaseNeed !== null ? await this.fetchContextAndLease(request, leaseNeed, budgetNeed) : await this.fetchContext(request);
    this.contexts.set(key, { row, fetchedAt: Date.now(), refreshing: false });
    return row;
  }

  /** Every cached answer forgotten, and every read in flight not kept: the next call reads its session again. */
  forget(): void {
    this.generation += 1;
    this.contexts.clear();
  }

  /** Whether `wallet` is `endUserId`'s; a match is remembered (an HMAC per call otherwise), a mismatch never is. */
  async isWalletOf(endUserId: string, wallet: string): Promise<boolean> {
    const pair = `${endUserId}/${wallet}`;
    if (this.verifiedOwners.has(pair)) return true;
    if ((await walletName(this.state.env.SESSION_HASH_SECRET, endUserId)) !== wallet) return false;
    this.verifiedOwners.add(pair);
    return true;
  }

  private async fetchContextAndLease(request: WalletCallRequest, need: bigint, budgetNeed: bigint): Promise<CallContext> {
    const generation = this.generation;
    const context = await this.leases.leaseWithContext(request, need, budgetNeed);
    // A revocation pushed while this was read: the context may predate it; read it again.
    return generation === this.generation ? context : this.fetchContext(request);
  }

  private async fetchContext(request: WalletCallRequest): Promise<CallContext> {
    const generation = this.generation;
    const context = await fetchCallContext(this.state.openDatabase(), request);
    // A revocation pushed while this was read: the answer may predate it; read again.
    return generation === this.generation ? context : this.fetchContext(request);
  }
}
