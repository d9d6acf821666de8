import type { ShownError } from './state/store.ts';

/** A failure as the user sees it: the message, the code, and the request ID to quote to support. */
export function ErrorNotice({ error }: { error: ShownError }) {
  return (
    <div className="faucet-error" role="alert" data-code={error.code}>
      <p className="faucet-error__message">{error.message}</p>
      <p className="faucet-error__details">
        Code <code>{error.code}</code>
        {error.requestId ? (
          <>
            {' · '}Request ID <code>{error.requestId}</code>
          </>
        ) : null}
      </p>
    </div>
  );
}
