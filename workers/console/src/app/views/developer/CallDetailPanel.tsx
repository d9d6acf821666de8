/**
 * One call in full, beside the Calls list: what was asked and what answered, the outcome and its
 * error, timings, each attempt, tokens by class and the money (exact strings as the API gives them),
 * the masked key. Focus moves to its heading when it opens; Close gives focus back to the list.
 */
import { useEffect, useId, useRef } from 'react';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Facts, Loading, usd } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';
import type { CallDetail } from './calls-wire.ts';

const ms = (value: number | null) => (value === null ? '—' : `${value.toLocaleString('en-US')} ms`);
const count = (value: number) => value.toLocaleString('en-US');

export function CallDetailPanel({ callId, onClose }: { callId: string; onClose(): void }) {
  const api = useApi();
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const call = useLoad(() => api.get<CallDetail>(`/v1/developer/calls/${encodeURIComponent(callId)}`), [api, callId]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: focus moves once per call opened.
  useEffect(() => heading.current?.focus(), [callId]);
  const detail = call.data;
  return (
    <section className="card call-detail" aria-labelledby={headingId}>
      <div className="card__head">
        <h2 id={headingId} ref={heading} tabIndex={-1}>
          Call details
        </h2>
        <button type="button" className="ghost" onClick={onClose}>
          Close<span className="sr-only"> call details</span>
        </button>
      </div>
      <ErrorLine error={call.error} />
      {detail ? (
        <>
          <Facts
            label="Call"
            rows={[
              ['Request id', detail.request_id],
              ['Call id', detail.id],
              ['At', detail.created_at.replace('T', ' ').slice(0, 23)],
              ['App / feature', `${detail.app} / ${detail.feature}`],
              ['User (user_ref)', detail.user_ref],
              ['Surface', `${detail.surface}${detail.stream ? ', streamed' : ''}`],
              ['Model asked for', detail.requested_model],
              ['Answered by', detail.model ? `${detail.provider}:${detail.model}` : '—'],
              ['Route', detail.route_mode ?? '—'],
              ['Key', detail.masked_key ?? '—'],
              ['Outcome', detail.estimated ? `${detail.outcome} (billed on an estimate)` : detail.outcome],
              ['Error code', detail.error_code ?? '—'],
              ['Error message', detail.error_message ?? '—'],
            ]}
          />
          <h3>Timings</h3>
          <Facts
            label="Timings"
            rows={[
              ['Authorize', ms(detail.timings.authorize_ms)],
              ['First byte', ms(detail.timings.first_byte_ms)],
              ['Total', ms(detail.timings.total_ms)],
            ]}
          />
          <h3>Tokens</h3>
          {detail.tokens ? (
            <Facts
              label="Tokens"
              rows={[
                ['Input', count(detail.tokens.input)],
                ['Cached input', count(detail.tokens.cached_input)],
                ['Cache write', count(detail.tokens.cache_write)],
                ['Audio input', count(detail.tokens.audio_input)],
                ['Output', count(detail.tokens.output)],
                ['Reasoning', count(detail.tokens.reasoning)],
                ['Audio output', count(detail.tokens.audio_output)],
              ]}
            />
          ) : (
            <p className="muted">Nothing was billed.</p>
          )}
          <h3>Money</h3>
          {detail.money ? (
            <Facts
              label="Money"
              rows={[
                ['Charged to the end user', usd(detail.money.retail_usd)],
                ['Your revenue', usd(detail.money.developer_revenue_usd)],
                ['Upstream cost', usd(detail.money.upstream_cost_usd)],
                ['Platform share', usd(detail.money.platform_share_usd)],
                ['Receivable', usd(detail.money.receivable_usd)],
              ]}
            />
          ) : (
            <p className="muted">Nothing was billed.</p>
          )}
          {detail.attempts?.length ? (
            <>
              <h3>Attempts</h3>
              <ScrollTable label="Attempts">
                <table aria-label="Attempts">
                  <thead>
                    <tr>
                      <th scope="col">Model</th>
                      <th scope="col">Outcome</th>
                      <th scope="col">Status</th>
                      <th scope="col">Error code</th>
                    </tr>
                  </thead>
                  <tbody>
                    {detail.attempts.map((attempt, index) => (
                      // biome-ignore lint/suspicious/noArrayIndexKey: attempts are in order and never move.
                      <tr key={index}>
                        <th scope="row">{`${attempt.provider}:${attempt.model}`}</th>
                        <td>{attempt.outcome}</td>
                        <td>{attempt.status ?? '—'}</td>
                        <td>{attempt.error_code ?? '—'}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollTable>
            </>
          ) : null}
        </>
      ) : call.loading ? (
        <Loading what="call" />
      ) : null}
    </section>
  );
}
