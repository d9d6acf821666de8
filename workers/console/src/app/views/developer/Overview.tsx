/**
 * Developer overview: the wallet, four charts of the last 30 days (your revenue with what end users
 * paid, calls, tokens, upstream cost), each with its numbers as a table for screen readers and for
 * anyone who wants them, and the top features and models of the period.
 */
import { useMemo } from 'react';
import { useApi } from '../../session.tsx';
import { fromUnits, toChartNumber } from '../../ui/amounts.ts';
import type { Series } from '../../ui/Chart.tsx';
import { ChartFigure } from '../../ui/chart-figure.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Loading, Section, usd } from '../../ui/parts.tsx';
import { type DailyUsage, type Figures, loadDailyUsage } from './usage.ts';
import { ScrollTable } from '../../ui/scroll-table.tsx';

interface DeveloperWallet {
  balance_usd: string;
  pending_usd: string;
  reserved_usd: string;
  available_usd: string;
}

const browserTimeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
const count = (value: number) => value.toLocaleString('en-US');
/** An axis tick of a count: whole numbers only (uPlot may place ticks at 0.2, 0.4, …). */
const countTick = (value: number) => (Number.isInteger(value) ? count(value) : '');
/** A chart value in USD: cents from a dollar up, otherwise as many of the 8 decimals as it needs. */
const dollars = (value: number) =>
  Math.abs(value) >= 1 ? `$${value.toFixed(2)}` : `$${value.toFixed(8).replace(/0+$/, '').replace(/\.$/, '')}`;

function Wallet() {
  const api = useApi();
  const wallet = useLoad(() => api.get<DeveloperWallet>('/v1/developer/wallet'), [api]);
  return (
    <Section title="Wallet">
      <ErrorLine error={wallet.error} />
      {wallet.data ? (
        <dl className="stats" aria-label="Wallet">
          <div>
            <dt>Available</dt>
            <dd>{usd(wallet.data.available_usd)}</dd>
          </div>
          <div>
            <dt>Pending</dt>
            <dd>{usd(wallet.data.pending_usd)}</dd>
          </div>
          <div>
            <dt>Reserved for payouts</dt>
            <dd>{usd(wallet.data.reserved_usd)}</dd>
          </div>
          <div>
            <dt>Balance</dt>
            <dd>{usd(wallet.data.balance_usd)}</dd>
          </div>
        </dl>
      ) : wallet.loading ? (
        <Loading what="wallet" />
      ) : null}
    </Section>
  );
}

interface ChartSpec {
  title: string;
  series: Array<{ label: string; color: Series['color']; value(day: Figures): number; shown(day: Figures): string }>;
  format(value: number): string;
}

const money = (pick: (day: Figures) => bigint) => ({
  value: (day: Figures) => toChartNumber(fromUnits(pick(day))),
  shown: (day: Figures) => usd(fromUnits(pick(day))),
});

const charts: ChartSpec[] = [
  {
    title: 'Revenue',
    format: dollars,
    series: [
      { label: 'Your revenue', color: '--series-1', ...money((day) => day.revenue) },
      { label: 'Paid by end users', color: '--series-2', ...money((day) => day.retail) },
    ],
  },
  {
    title: 'Calls',
    format: countTick,
    series: [{ label: 'Calls', color: '--series-1', value: (day) => day.calls, shown: (day) => count(day.calls) }],
  },
  {
    title: 'Tokens',
    format: countTick,
    series: [{ label: 'Tokens', color: '--series-1', value: (day) => day.tokens, shown: (day) => count(day.tokens) }],
  },
  {
    title: 'Upstream cost',
    format: dollars,
    series: [{ label: 'Upstream cost', color: '--series-1', ...money((day) => day.upstreamCost) }],
  },
];

function DailyChart({ spec, usage }: { spec: ChartSpec; usage: DailyUsage }) {
  return (
    <Section title={spec.title}>
      <ChartFigure<DailyUsage['days'][number]>
        title={spec.title}
        caption={`${spec.title} per day, ${usage.from} to ${usage.to} (${usage.tz})`}
        rows={usage.days}
        series={spec.series}
        format={spec.format}
      />
    </Section>
  );
}

function TopTable({ title, rows }: { title: string; rows: DailyUsage['topFeatures'] }) {
  return (
    <Section title={title}>
      {rows.length === 0 ? (
        <p className="muted">No calls in this period.</p>
      ) : (
        <ScrollTable label={title}>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" className="num">
                  Calls
                </th>
                <th scope="col" className="num">
                  Tokens
                </th>
                <th scope="col" className="num">
                  Your revenue
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.name}>
                  <th scope="row">{row.name}</th>
                  <td className="num">{count(row.calls)}</td>
                  <td className="num">{count(row.tokens)}</td>
                  <td className="num">{usd(fromUnits(row.revenue))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
    </Section>
  );
}

export function Overview() {
  const api = useApi();
  const timeZone = useMemo(browserTimeZone, []);
  const usage = useLoad(() => loadDailyUsage(api, timeZone), [api, timeZone]);
  return (
    <>
      <h1>Overview</h1>
      <Wallet />
      <p className="muted">
        {usage.data ? `Last 30 days, ${usage.data.from} to ${usage.data.to}, days in ${usage.data.tz}.` : 'Last 30 days.'}{' '}
        <button type="button" className="ghost" onClick={usage.reload}>
          Refresh
        </button>
      </p>
      <ErrorLine error={usage.error} />
      {usage.data ? (
        <>
          <dl className="stats card" aria-label="Totals of the period">
            <div>
              <dt>Calls</dt>
              <dd>{count(usage.data.totals.calls)}</dd>
            </div>
            <div>
              <dt>Your revenue</dt>
              <dd>{usd(usage.data.totals.developer_revenue_usd)}</dd>
            </div>
            <div>
              <dt>Paid by end users</dt>
              <dd>{usd(usage.data.totals.retail_usd)}</dd>
            </div>
            <div>
              <dt>Upstream cost</dt>
              <dd>{usd(usage.data.totals.upstream_cost_usd)}</dd>
            </div>
          </dl>
          <div className="grid">
            {charts.map((spec) => (
              <DailyChart key={spec.title} spec={spec} usage={usage.data!} />
            ))}
          </div>
          <div className="grid">
            <TopTable title="Top features" rows={usage.data.topFeatures} />
            <TopTable title="Top models" rows={usage.data.topModels} />
          </div>
        </>
      ) : usage.loading ? (
        <Loading what="usage" />
      ) : null}
    </>
  );
}
