import { FaucetError } from '../../../workers/shared/wire/errors';
import type { RouteHandler } from '../context';
import { readJsonBody } from '../http/read-json-body';
import { sendJson } from '../http/send';
import { describeReportIssues, usageReportSchema } from '../usage/usage-report-schema';

const sessionToken = /^Bearer (fvs_[A-Za-z0-9_-]{16,512})$/;

/**
 * Accepts a local usage report and answers 202 only once it is on disk; the forwarder takes it
 * from there. The session token is kept with it because the control API needs it to record.
 */
export const usageReport: RouteHandler = async ({ request, response, services }) => {
  const token = sessionToken.exec(request.headers.authorization ?? '')?.[1];
  if (!token) throw new FaucetError('unauthorized', 'A usage report needs `Authorization: Bearer fvs_…` (the Faucet session token).');

  const parsed = usageReportSchema.safeParse(await readJsonBody(request, services.limits.reportBodyBytes));
  if (!parsed.success) throw new FaucetError('invalid_request', `Invalid usage report: ${describeReportIssues(parsed.error)}.`);

  const now = new Date().toISOString();
  await services.outbox.put({ version: 1, report: parsed.data, session_token: token, queued_at: now, attempts: 0, next_attempt_at: now });
  services.forwarder.wake();
  sendJson(response, 202, { status: 'queued', request_id: parsed.data.request_id });
};
