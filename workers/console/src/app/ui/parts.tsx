/**
 * Small building blocks shared by the views: the API error line (the envelope's message, announced
 * to screen readers), a loading line, a section with its heading, a field with its label, and a
 * named list of facts (term and value).
 */
import { type ReactNode, useId } from 'react';
import { describeError } from '../api.ts';

export function ErrorLine({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {describeError(error)}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Section({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <div className="card__head">
        <h2 id={id}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** A labelled input; `hint` is tied to the input with aria-describedby. */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: string;
  children: (id: string, describedBy?: string) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, hint ? hintId : undefined)}
      {hint ? (
        <small id={hintId} className="muted">
          {hint}
        </small>
      ) : null}
    </div>
  );
}

/** Shows a USD amount string as the API gives it (8 decimals), trimmed to cents when exact. */
export function usd(amount: string | null | undefined): string {
  if (amount == null) return '—';
  const [whole, fraction = ''] = amount.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  return `$${whole}.${trimmed.length <= 2 ? trimmed.padEnd(2, '0') : trimmed}`;
}

/** The outcome of a form: the API's refusal, or a polite success line. */
export function Outcome({ error, done }: { error: unknown; done: string }) {
  return (
    <>
      <ErrorLine error={error} />
      <p className="ok" role="status">
        {error ? '' : done}
      </p>
    </>
  );
}

/** Terms and their values as a named description list (two columns, wrapping long values). */
export function Facts({ label, rows }: { label: string; rows: Array<[string, ReactNode]> }) {
  return (
    <dl className="facts" aria-label={label}>
      {rows.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
