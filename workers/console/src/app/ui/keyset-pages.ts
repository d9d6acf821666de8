/**
 * A keyset-paged list (the request log, a webhook endpoint's deliveries): the first page as loaded,
 * then each "More" appends the next page read with the last cursor. `reset` forgets the appended
 * pages (a new filter, a refresh: the first page is read again by its loader).
 */
import { useState } from 'react';

/** A page as the API answers it. */
interface Page<T> {
  data: T[];
  next_cursor?: string | null;
}

interface Appended<T> {
  rows: T[];
  cursor: string | null;
  error: unknown;
  busy: boolean;
}

export function useKeysetPages<T>(first: Page<T> | undefined, nextPage: (cursor: string) => Promise<Page<T>>) {
  const [more, setMore] = useState<Appended<T> | null>(null);
  const rows = [...(first?.data ?? []), ...(more?.rows ?? [])];
  const cursor = more ? more.cursor : (first?.next_cursor ?? null);

  async function loadMore() {
    if (!cursor) return;
    setMore((previous) => ({ rows: previous?.rows ?? [], cursor, error: undefined, busy: true }));
    try {
      const page = await nextPage(cursor);
      setMore((previous) => ({
        rows: [...(previous?.rows ?? []), ...page.data],
        cursor: page.next_cursor ?? null,
        error: undefined,
        busy: false,
      }));
    } catch (error) {
      setMore((previous) => ({ rows: previous?.rows ?? [], cursor, error, busy: false }));
    }
  }

  return { rows, cursor, loadMore, reset: () => setMore(null), error: more?.error, busy: more?.busy ?? false };
}
