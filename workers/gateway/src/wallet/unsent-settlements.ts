/**
 * Settlements of calls answered in this isolate whose message to the wallet object is not sent yet
 * (it leaves once the answer has: routes/chat-completions.ts). A call of the same wallet authorized
 * from this isolate meanwhile sends them first, on its own stub and before its `authorize`, so the
 * object has them when it judges that call: a call that follows an answer at once finds the
 * previous call settled, not in flight at its worst case (which, on a wallet whose lease cannot hold
 * both, cost a renewal's round trip). The answered call still sends its own: the object takes a
 * settlement once and ignores it after.
 */
import type { WalletSettlement } from '#shared/durable-objects.ts';

/** Per wallet: call id → its settlement (built when first sent). Plain data only: no request's I/O objects. */
const unsent = new Map<string, Map<string, () => WalletSettlement>>();

/** Keeps a settlement until it is sent; returns what the sender calls when it sends it. */
export function keepUnsent(wallet: string, callId: string, settlement: () => WalletSettlement): () => void {
  let calls = unsent.get(wallet);
  if (calls === undefined) {
    calls = new Map();
    unsent.set(wallet, calls);
  }
  calls.set(callId, settlement);
  return () => {
    calls.delete(callId);
    if (calls.size === 0 && unsent.get(wallet) === calls) unsent.delete(wallet);
  };
}

/** The wallet's settlements not sent yet, taken (each is sent by the taker and again by its own call). */
export function takeUnsent(wallet: string): [string, WalletSettlement][] {
  const calls = unsent.get(wallet);
  if (calls === undefined) return [];
  unsent.delete(wallet);
  return [...calls].map(([callId, settlement]) => [callId, settlement()]);
}
