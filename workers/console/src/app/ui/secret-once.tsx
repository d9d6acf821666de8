/**
 * A secret the API shows only once (a webhook signing secret): marked as such, with a copy button and
 * the warning that it is not shown again. Focus moves to it when it appears, so a keyboard or screen
 * reader user lands on it; "I stored it" takes it off the page.
 */
import { useEffect, useId, useRef, useState } from 'react';

export function SecretOnce({ title, secret, onDone }: { title: string; secret: string; onDone(): void }) {
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const code = useRef<HTMLElement>(null);
  const [copied, setCopied] = useState('');
  // biome-ignore lint/correctness/useExhaustiveDependencies: focus moves once per secret shown.
  useEffect(() => {
    setCopied('');
    heading.current?.focus();
  }, [secret]);

  async function copy() {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied to the clipboard.');
    } catch {
      // No clipboard (permission refused, or not a secure context): select the text for a keyboard copy.
      const range = document.createRange();
      if (code.current) range.selectNodeContents(code.current);
      window.getSelection()?.removeAllRanges();
      window.getSelection()?.addRange(range);
      setCopied('The browser refused the clipboard: the secret is selected, copy it with Ctrl+C (⌘C on a Mac).');
    }
  }

  return (
    <section className="secret-once" aria-labelledby={headingId}>
      <h3 id={headingId} ref={heading} tabIndex={-1}>
        {title}
      </h3>
      <p>
        <strong>Copy it now: it is not shown again.</strong> Store it where your receiver can read it; Faucet keeps it encrypted and shows
        only its last four characters from now on.
      </p>
      <code className="secret" ref={code}>
        {secret}
      </code>
      <div className="actions">
        <button type="button" onClick={copy}>
          Copy secret
        </button>
        <button type="button" className="ghost" onClick={onDone}>
          I stored it
        </button>
        <span className="ok" role="status">
          {copied}
        </span>
      </div>
    </section>
  );
}
