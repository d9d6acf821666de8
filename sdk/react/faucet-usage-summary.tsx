import type { FaucetMetadata } from '@faucet/sdk';

/** The facts of one call: request ID, route, model, tokens, charge and, for local calls, the report's fate. */
export function FaucetUsageSummary({ faucet }: { faucet: FaucetMetadata }) {
  return (
    <dl className="faucet-summary" aria-label="Usage summary">
      <dt>Request ID</dt>
      <dd className="faucet-summary__request-id">{faucet.request_id}</dd>
      <dt>Route mode</dt>
      <dd className="faucet-summary__route-mode">{faucet.route_mode}</dd>
      <dt>Model</dt>
      <dd className="faucet-summary__model">{`${faucet.provider}:${faucet.model}`}</dd>
      <dt>Tokens</dt>
      <dd className="faucet-summary__tokens">
        {`${faucet.input_tokens} in / ${faucet.output_tokens} out`}
        {faucet.estimated ? ' (estimated)' : ''}
      </dd>
      {faucet.charge ? (
        <>
          <dt>Charge</dt>
          <dd className="faucet-summary__charge">{`${faucet.charge.amount_usd} ${faucet.charge.currency}`}</dd>
        </>
      ) : null}
      {faucet.usage_report_status ? (
        <>
          <dt>Usage report</dt>
          <dd className="faucet-summary__report-status">{faucet.usage_report_status}</dd>
        </>
      ) : null}
    </dl>
  );
}
