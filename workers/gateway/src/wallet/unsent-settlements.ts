/**
 * Settlements of calls answered in this isolate whose message to the wallet object is not sent yet
 * (its own message leaves a moment after the answer: routes/chat-call.ts). A call of the same wallet
 * authorized from this isolate meanwhile carries them in its `authorize`, so the object has them when
 * it judges that call — a call that follows an answer at once finds the previous call settled, not in
 * flight at its worst case (which, on a wallet whose lease cannot hold both, cost a renewal's round
 * trip) — and a busy wallet's settlements need no messages of their own. An answered call whose
 * settlement was carried sends nothing once that `authorize` is answered (the object answers it only
 * once they are durable), and sends its own if that `authorize` failed: the object takes a settlement
 * once and ignores it after.
 */
import type { WalletSettlement } from '#shared/durable-objects.ts';

interface Unsent {
  /** Built when first sent. Plain data only: no request's I/O objects. */
  settlement: () => WalletSettlement;
  /** Taken by another call's `authorize`: resolves true once the object answered it, false if that failed. */
  carried: Promise<boolean> | null;
}

/** Per wallet: call id → its settlement, not sent yet. */
const unsent = new Map<string, Map<string, Unsent>>();

/**
 * Keeps a settlement until it is sent. Returns what its own sender calls when its turn comes: true
 * when it must send the settlement itself (no other call took it, or the `authorize` that carried it
 * failed), false when the object has it.
 */
export function keepUnsent(wallet: string, callId: string, settlement: () => WalletSettlement): () => Promise<boolean> {
  let calls = unsent.get(wallet);
  if (calls === undefined) {
    calls = new Map();
    unsent.set(wallet, calls);
  }
  const entry: Unsent = { settlement, carried: null };
  calls.set(callId, entry);
  const kept = calls;
  return async () => {
    if (entry.carried !== null) return !(await entry.carried);
    kept.delete(callId);
    if (kept.size === 0 && unsent.get(wallet) === kept) unsent.delete(wallet);
    return true;
  };
}

/** The settlements an `authorize` carries. */
export interface CarriedSettlements {
  settlements: [string, WalletSettlement][];
  /** The `authorize` that carries them: once it is answered their calls send nothing; if it fails, they send their own. */
  riding<T>(authorize: PromiseLike<T>): Promise<T>;
}

/** Takes the wallet's settlements not sent yet, for the `authorize` about to be sent to its object. */
export function takeUnsent(wallet: string): CarriedSettlements {
  const calls = unsent.get(wallet);
  if (calls === undefined) return { settlements: [], riding: async (authorize) => authorize };
  unsent.delete(wallet);
  let answered: (answered: boolean) => void = () => undefined;
  const carried = new Promise<boolean>((resolve) => {
    answered = resolve;
  });
  const settlements = [...calls].map(([callId, entry]): [string, WalletSettlement] => {
    entry.carried = carried;
    return [callId, entry.settlement()];
  });
  return {
    settlements,
    riding: async (authorize) => {
      try {
        const decision = await authorize;
        answered(true);
        return decision;
      } catch (error) {
        answered(false);
        throw error;
      }
    },
  };
}
