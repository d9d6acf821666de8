import type { Logger } from '../log';
import { backoffDelay, isRetryableStatus, type BackoffOptions } from './backoff';
import type { OutboxEntry, OutboxStore } from './outbox-store';

export interface ForwarderOptions {
  store: OutboxStore;
  /** Control API base URL; without one, reports wait in the outbox. */
  apiBaseUrl: string | undefined;
  backoff: BackoffOptions;
  requestTimeoutMs: number;
  log: Logger;
}

/**
 * Sends outbox entries to `POST {api}/v1/usage/local`, one at a time. An entry leaves the outbox
 * only after a 2xx (the API is idempotent per request_id, so a resend after a crash is harmless);
 * network errors, 408/425/429 and 5xx are retried with backoff; other 4xx are dead-lettered.
 */
export class Forwarder {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly options: ForwarderOptions) {}

  /** Starts (or restarts) a pass over due entries now. */
  wake(): void {
    if (this.stopped || !this.options.apiBaseUrl) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  /** Resolves once no pass is running (a pass already asked for included). */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private async pass(): Promise<void> {
    let entries: OutboxEntry[] = [];
    try {
      entries = await this.options.store.list();
      for (const entry of entries) {
        if (this.stopped) return;
        if (Date.parse(entry.next_attempt_at) <= Date.now()) await this.forward(entry);
      }
      entries = await this.options.store.list();
    } catch (error) {
      this.options.log.error('outbox pass failed', { error: (error as { code?: string }).code ?? 'unknown' });
    }
    this.scheduleNext(entries);
  }

  private scheduleNext(entries: OutboxEntry[]): void {
    if (this.stopped || entries.length === 0) return;
    const next = Math.min(...entries.map((entry) => Date.parse(entry.next_attempt_at)));
    this.timer = setTimeout(() => this.wake(), Math.max(0, next - Date.now()));
    this.timer.unref();
  }

  private async forward(entry: OutboxEntry): Promise<void> {
    const requestId = entry.report.request_id;
    let outcome: { status: number; code?: string } | { network: string };
    try {
      const response = await fetch(`${this.options.apiBaseUrl}/v1/usage/local`, {
        method: 'POST',
        headers: { authorization: `Bearer ${entry.session_token}`, 'content-type': 'application/json' },
        body: JSON.stringify(entry.report),
        signal: AbortSignal.timeout(this.options.requestTimeoutMs),
      });
      const body = (await response.json().catch(() => undefined)) as { error?: { code?: unknown }; recorded?: unknown } | undefined;
      if (response.ok) {
        await this.options.store.remove(requestId);
        this.options.log.info('usage report forwarded', { request_id: requestId, recorded: body?.recorded === true });
        return;
      }
      const code = typeof body?.error?.code === 'string' ? body.error.code : undefined;
      outcome = { status: response.status, code };
    } catch (error) {
      outcome = { network: (error as { name?: string }).name === 'TimeoutError' ? 'timed out' : 'network error' };
    }

    const description = 'network' in outcome ? outcome.network : `HTTP ${outcome.status}${outcome.code ? ` ${outcome.code}` : ''}`;
    if ('status' in outcome && !isRetryableStatus(outcome.status)) {
      await this.options.store.deadLetter(entry, `control API refused the report: ${description}`);
      this.options.log.warn('usage report dead-lettered', { request_id: requestId, reason: description });
      return;
    }
    const attempts = entry.attempts + 1;
    const delay = backoffDelay(attempts, this.options.backoff);
    await this.options.store.put({
      ...entry,
      attempts,
      last_error: description,
      next_attempt_at: new Date(Date.now() + delay).toISOString(),
    });
    this.options.log.warn('usage report forward failed; will retry', {
      request_id: requestId,
      reason: description,
      attempts,
      retry_in_ms: delay,
    });
  }
}
