/**
 * A form's submit: runs an API change, keeps its error (shown with ErrorLine) and a short success
 * message for the live region, and tells the caller to reload on success.
 */
import { useCallback, useState } from 'react';

export interface Action {
  busy: boolean;
  error: unknown;
  done: string;
  run(change: () => Promise<unknown>, doneMessage: string | (() => string)): Promise<boolean>;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState('');
  const run = useCallback(async (change: () => Promise<unknown>, doneMessage: string | (() => string)) => {
    setBusy(true);
    setError(null);
    setDone('');
    try {
      await change();
      setDone(typeof doneMessage === 'function' ? doneMessage() : doneMessage);
      return true;
    } catch (failure) {
      setError(failure);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, done, run };
}
