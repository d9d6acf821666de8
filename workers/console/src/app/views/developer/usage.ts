/**
 * The Overview's numbers: every page of `GET /v1/developer/usage` for the last 30 local days in the
 * browser's time zone, folded per day (all 30 days, zeros included) and into top features and
 * models. Money is summed exactly (ui/amounts.ts).
 */
import type { ApiClient } from '../../api.ts';
import { toUnits } from '../../ui/amounts.ts';

interface UsageAmounts {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  retail_usd: string;
  developer_revenue_usd: string;
  upstream_cost_usd: string;
}

interface UsageRow extends UsageAmounts {
  day: string;
  public_app_id: string;
  feature_key: string;
  model: string;
  provider: string;
  route_mode: string;
}

interface UsagePage {
  from: string;
  to: string;
  tz: string;
  data: UsageRow[];
  totals: UsageAmounts;
  next_cursor: string | null;
}

export interface Figures {
  calls: number;
  tokens: number;
  retail: bigint;
  revenue: bigint;
  upstreamCost: bigint;
}

export interface DailyUsage {
  from: string;
  to: string;
  tz: string;
  days: Array<{ day: string } & Figures>;
  totals: UsageAmounts;
  topFeatures: Array<{ name: string } & Figures>;
  topModels: Array<{ name: string } & Figures>;
}

const zero = (): Figures => ({ calls: 0, tokens: 0, retail: 0n, revenue: 0n, upstreamCost: 0n });

function add(figures: Figures, row: UsageAmounts): void {
  figures.calls += row.calls;
  figures.tokens += row.input_tokens + row.output_tokens;
  figures.retail += toUnits(row.retail_usd);
  figures.revenue += toUnits(row.developer_revenue_usd);
  figures.upstreamCost += toUnits(row.upstream_cost_usd);
}

/** Today's date (YYYY-MM-DD) in `timeZone`, moved by `offsetDays`. */
export function localDay(timeZone: string, offsetDays = 0, now = new Date()): string {
  const today = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
  const date = new Date(`${today}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + offsetDays);
  return date.toISOString().slice(0, 10);
}

function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (const date = new Date(`${from}T00:00:00Z`); date.toISOString().slice(0, 10) <= to; date.setUTCDate(date.getUTCDate() + 1))
    days.push(date.toISOString().slice(0, 10));
  return days;
}

function top(groups: Map<string, Figures>, count: number): Array<{ name: string } & Figures> {
  return [...groups.entries()]
    .map(([name, figures]) => ({ name, ...figures }))
    .sort((a, b) => (b.revenue === a.revenue ? b.calls - a.calls : b.revenue > a.revenue ? 1 : -1))
    .slice(0, count);
}

export async function loadDailyUsage(api: ApiClient, timeZone: string, days = 30): Promise<DailyUsage> {
  const from = localDay(timeZone, -(days - 1));
  const to = localDay(timeZone);
  const perDay = new Map(daysBetween(from, to).map((day) => [day, zero()]));
  const features = new Map<string, Figures>();
  const models = new Map<string, Figures>();
  let cursor: string | undefined;
  let totals: UsageAmounts | undefined;
  do {
    const page = await api.get<UsagePage>('/v1/developer/usage', { from, to, tz: timeZone, limit: 1000, cursor });
    totals = page.totals;
    for (const row of page.data) {
      add(perDay.get(row.day) ?? zero(), row);
      const feature = `${row.public_app_id} / ${row.feature_key}`;
      if (!features.has(feature)) features.set(feature, zero());
      add(features.get(feature)!, row);
      if (!models.has(row.model)) models.set(row.model, zero());
      add(models.get(row.model)!, row);
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return {
    from,
    to,
    tz: timeZone,
    days: [...perDay.entries()].map(([day, figures]) => ({ day, ...figures })),
    totals,
    topFeatures: top(features, 5),
    topModels: top(models, 5),
  };
}
