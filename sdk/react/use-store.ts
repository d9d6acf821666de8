import { useSyncExternalStore } from 'react';
import type { Store } from './state/store.ts';

/** Subscribes a component to a store; the server snapshot is the same initial state, so SSR and hydration agree. */
export function useStore<State>(store: Store<State>): State {
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
}
