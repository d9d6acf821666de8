import { FaucetError } from '../errors.ts';
import { requestJson, type TransportConfig } from '../http/transport.ts';
import type { SessionManager } from '../session.ts';
import type { FlushResult, UsageReport, UsageReportStatus } from '../types.ts';
import type { UsageQueue } from './usage-queue.ts';

export interface ReportDeliveryConfig {
  transport: TransportConfig;
  bridgeUrl: string;
  sessions: SessionManager;
  queue: UsageQueue;
}

/** A report the bridge can never take (malformed, forbidden) is dropped rather than retried forever. */
type Outcome = 'accepted' | 'rejected' | 'failed';

/** Delivering a report is quick or it waits in the queue; the model call already finished. */
const reportTimeoutMs = 5_000;

async function deliver(config: ReportDeliveryConfig, report: UsageReport): Promise<Outcome> {
  try {
    await config.sessions.withToken((authorization) =>
      requestJson(
        { ...config.transport, timeoutMs: Math.min(config.transport.timeoutMs, reportTimeoutMs) },
        {
          method: 'POST',
          url: `${config.bridgeUrl}/usage/report`,
          authorization,
          body: report,
          retry: false,
          what: 'Usage report',
        },
      ),
    );
    return 'accepted';
  } catch (thrown) {
    if (!FaucetError.isInstance(thrown)) return 'failed';
    const permanent = thrown.status >= 400 && thrown.status < 500 && ![401, 408, 429].includes(thrown.status);
    return permanent ? 'rejected' : 'failed';
  }
}

/** Sends the report of a local call; when the bridge cannot take it now, queues it for `flush`. */
export async function reportUsage(config: ReportDeliveryConfig, report: UsageReport): Promise<UsageReportStatus> {
  const outcome = await deliver(config, report);
  if (outcome === 'failed') {
    config.queue.add(report);
    return 'queued';
  }
  return outcome;
}

/** Retries queued reports in order; stops at the first one that still fails (the bridge is likely down). */
export async function flushUsageReports(config: ReportDeliveryConfig): Promise<FlushResult> {
  let sent = 0;
  let dropped = 0;
  for (const report of config.queue.list()) {
    const outcome = await deliver(config, report);
    if (outcome === 'failed') break;
    config.queue.remove(report.request_id);
    if (outcome === 'accepted') sent++;
    else dropped++;
  }
  return { sent, dropped, pending: config.queue.size };
}
