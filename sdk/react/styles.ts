/**
 * Default look of the components, driven by CSS variables so an app re-themes them by setting
 * `--faucet-*` on any ancestor (or replaces this sheet and styles the `faucet-*` classes itself).
 * Insert it with `<style>{faucetStyles}</style>`.
 */
export const faucetStyles = `
:where(.faucet-chat, .faucet-feature, .faucet-usage, .faucet-topup, .faucet-receipt) {
  --faucet-font: system-ui, sans-serif;
  --faucet-text: #1c1f24;
  --faucet-muted: #5b6270;
  --faucet-surface: #ffffff;
  --faucet-surface-alt: #f3f5f8;
  --faucet-border: #d5dae1;
  --faucet-accent: #2457c5;
  --faucet-accent-text: #ffffff;
  --faucet-error: #a4161a;
  --faucet-error-surface: #fdecec;
  --faucet-radius: 8px;
  --faucet-gap: 0.75rem;
  font-family: var(--faucet-font);
  color: var(--faucet-text);
  background: var(--faucet-surface);
  border: 1px solid var(--faucet-border);
  border-radius: var(--faucet-radius);
  padding: var(--faucet-gap);
  display: grid;
  gap: var(--faucet-gap);
  min-width: 0;
  box-sizing: border-box;
}
:where(.faucet-chat, .faucet-feature, .faucet-usage, .faucet-topup, .faucet-receipt) h2 { margin: 0; font-size: 1.1rem; }
.faucet-chat__messages { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.5rem; max-height: 24rem; overflow-y: auto; }
.faucet-chat__message { overflow-wrap: anywhere; padding: 0.5rem 0.75rem; border-radius: var(--faucet-radius); background: var(--faucet-surface-alt); white-space: pre-wrap; }
.faucet-chat__message--user { justify-self: end; background: var(--faucet-accent); color: var(--faucet-accent-text); }
.faucet-chat__author { display: block; font-size: 0.75rem; opacity: 0.8; }
.faucet-chat__form, .faucet-feature__form { display: grid; gap: 0.5rem; grid-template-columns: 1fr auto; align-items: end; }
.faucet-chat__label, .faucet-feature__label { grid-column: 1 / -1; font-weight: 600; font-size: 0.9rem; }
.faucet-chat__input, .faucet-feature__input { box-sizing: border-box; width: 100%; min-width: 0; font: inherit; padding: 0.5rem; border: 1px solid var(--faucet-border); border-radius: var(--faucet-radius); background: var(--faucet-surface); color: inherit; }
.faucet-feature__input { font-family: ui-monospace, monospace; }
.faucet-feature__input[aria-invalid="true"] { border-color: var(--faucet-error); }
.faucet-button { font: inherit; padding: 0.5rem 1rem; border: 0; border-radius: var(--faucet-radius); background: var(--faucet-accent); color: var(--faucet-accent-text); cursor: pointer; }
.faucet-button:disabled { opacity: 0.5; cursor: not-allowed; }
.faucet-button:focus-visible, .faucet-chat__input:focus-visible, .faucet-feature__input:focus-visible, .faucet-topup__input:focus-visible { outline: 3px solid var(--faucet-accent); outline-offset: 2px; }
.faucet-error { border-left: 4px solid var(--faucet-error); background: var(--faucet-error-surface); color: var(--faucet-error); padding: 0.5rem 0.75rem; border-radius: var(--faucet-radius); }
.faucet-error p { margin: 0; }
.faucet-error__details { font-size: 0.8rem; }
.faucet-summary { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0; font-size: 0.9rem; }
.faucet-summary dt { color: var(--faucet-muted); }
.faucet-summary dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.faucet-usage__balance { font-weight: 700; font-family: ui-monospace, monospace; }
.faucet-usage { overflow-x: auto; }
.faucet-usage__refresh { justify-self: start; }
.faucet-usage__table { border-collapse: collapse; font-size: 0.85rem; width: 100%; }
.faucet-usage__table caption { text-align: left; color: var(--faucet-muted); }
.faucet-usage__table :is(th, td) { text-align: left; padding: 0.25rem 0.5rem; border-bottom: 1px solid var(--faucet-border); }
.faucet-topup__balance { font-weight: 700; font-family: ui-monospace, monospace; }
.faucet-topup p { margin: 0; }
.faucet-topup__status:empty { display: none; }
.faucet-topup__form { display: grid; gap: 0.5rem; grid-template-columns: 1fr auto; align-items: end; }
.faucet-topup__label, .faucet-topup__hint { grid-column: 1 / -1; }
.faucet-topup__label { font-weight: 600; font-size: 0.9rem; }
.faucet-topup__hint { font-size: 0.8rem; color: var(--faucet-muted); }
.faucet-topup__input { box-sizing: border-box; width: 100%; min-width: 0; font: inherit; padding: 0.5rem; border: 1px solid var(--faucet-border); border-radius: var(--faucet-radius); background: var(--faucet-surface); color: inherit; }
.faucet-topup__input[aria-invalid="true"] { border-color: var(--faucet-error); }
.faucet-topup__check { justify-self: start; }
.faucet-receipt__empty { margin: 0; color: var(--faucet-muted); }
`;
