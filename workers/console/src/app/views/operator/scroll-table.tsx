/**
 * A wide table's horizontal scroller, reachable by keyboard (a focusable, named region), so a
 * phone-width table can still be scrolled without a pointer (axe: scrollable-region-focusable).
 */
import type { ReactNode } from 'react';

export function ScrollTable({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus to be scrolled by keyboard
    <section className="table-scroll" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
