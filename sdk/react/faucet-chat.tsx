import { useEffect, useId, useMemo, useState, type KeyboardEvent } from 'react';
import type { RouteMode } from '@faucet/sdk';
import { classNames } from './class-names.ts';
import { ErrorNotice } from './error-notice.tsx';
import { useFaucetContext } from './faucet-context.tsx';
import { ChatStore } from './state/chat-store.ts';
import { useStore } from './use-store.ts';

export interface FaucetChatProps {
  feature: string;
  model?: string;
  routeMode?: RouteMode;
  title?: string;
  placeholder?: string;
  className?: string;
}

/** A conversation with streamed answers, a stop button while answering, and errors shown inline. */
export function FaucetChat({ feature, model, routeMode, title = 'Chat', placeholder = 'Ask something…', className }: FaucetChatProps) {
  const { client, usageEvents } = useFaucetContext();
  // A new client (another user, other URLs) gets a new store: nothing carries over between users.
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new store only for a new client; the props are read per call (below)
  const store = useMemo(() => new ChatStore(client, { feature }), [client]);
  // Read when a call starts, so the latest props apply without recreating the store (and losing its state).
  store.settings = { feature, model, routeMode, onSettled: usageEvents.notify };
  // Leaving the page (or switching user) stops an answer still streaming.
  useEffect(() => () => store.stop(), [store]);
  const state = useStore(store);
  const [draft, setDraft] = useState('');
  const titleId = useId();
  const inputId = useId();

  const send = () => {
    if (draft.trim() === '' || state.busy) return;
    void store.send(draft);
    setDraft('');
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      send();
    }
  };

  return (
    <section className={classNames('faucet-chat', className)} aria-labelledby={titleId} aria-busy={state.busy}>
      <h2 id={titleId} className="faucet-chat__title">
        {title}
      </h2>
      {/* The live region wraps the list: a role on the <ol> itself would orphan its items (axe: listitem). */}
      <div role="log" aria-live="polite" aria-label="Messages">
        <ol className="faucet-chat__messages">
          {state.messages.map((message) => (
            <li key={message.id} className={`faucet-chat__message faucet-chat__message--${message.role}`} data-status={message.status}>
              <span className="faucet-chat__author">{message.role === 'user' ? 'You' : 'Assistant'}</span>
              <span className="faucet-chat__content">{message.content || (message.status === 'streaming' ? '…' : '')}</span>
              {message.status === 'stopped' ? <span className="faucet-chat__note"> (stopped)</span> : null}
            </li>
          ))}
        </ol>
      </div>
      {state.error ? <ErrorNotice error={state.error} /> : null}
      <form
        className="faucet-chat__form"
        onSubmit={(event) => {
          event.preventDefault();
          send();
        }}
      >
        <label htmlFor={inputId} className="faucet-chat__label">
          Message
        </label>
        <textarea
          id={inputId}
          className="faucet-chat__input"
          value={draft}
          placeholder={placeholder}
          rows={2}
          onChange={(event) => setDraft(event.target.value)}
          onKeyDown={onKeyDown}
        />
        {state.busy ? (
          <button type="button" className="faucet-button faucet-chat__stop" onClick={() => store.stop()}>
            Stop
          </button>
        ) : (
          <button type="submit" className="faucet-button faucet-chat__send" disabled={draft.trim() === ''}>
            Send
          </button>
        )}
      </form>
    </section>
  );
}
