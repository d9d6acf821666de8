import type { UsageReport } from '../types.ts';

/** Reports beyond this are dropped oldest first, so a bridge that never returns cannot grow memory without bound. */
const maxPending = 1_000;

/** Usage reports the bridge did not take yet; kept in memory until `flush` delivers them. */
export class UsageQueue {
  private reports: UsageReport[] = [];

  add(report: UsageReport): void {
    if (this.reports.some((pending) => pending.request_id === report.request_id)) return;
    this.reports.push(report);
    if (this.reports.length > maxPending) this.reports.shift();
  }

  /** Copies, so callers cannot change what will be sent. */
  list(): UsageReport[] {
    return this.reports.map((report) => ({ ...report }));
  }

  remove(requestId: string): void {
    this.reports = this.reports.filter((report) => report.request_id !== requestId);
  }

  get size(): number {
    return this.reports.length;
  }
}
