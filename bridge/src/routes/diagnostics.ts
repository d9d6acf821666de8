import type { RouteHandler } from '../context';
import { sendJson } from '../http/send';
import { probeUpstream } from '../upstream/upstream-resolver';
import { FaucetError } from '../../../workers/shared/wire/errors';

const probeTimeoutMs = 2000;

/** What a user (or the SDK's `local.diagnose()`) needs to see why local calls fail. Never a key or token. */
export const diagnostics: RouteHandler = async ({ response, services }) => {
  const { bound, outbox } = services;
  let upstream: { url: string | null; kind: string | null; reachable: boolean; reason?: string };
  try {
    const resolved = await services.upstream.resolve();
    const probe = await probeUpstream(resolved, probeTimeoutMs, services.upstreamApiKey);
    upstream = { url: resolved.url, kind: resolved.kind, ...probe };
    if (!probe.reachable) services.upstream.forget(resolved);
  } catch (error) {
    const reason = FaucetError.isInstance(error) ? error.message : 'upstream could not be resolved';
    upstream = { url: null, kind: null, reachable: false, reason };
  }
  sendJson(response, 200, {
    bound_address: `${bound.host}:${bound.port}`,
    loopback: bound.loopback,
    upstream,
    outbox: {
      pending: await outbox.pendingCount(),
      dead_letter: (await outbox.listDead()).length,
      forwarding_to: services.apiBaseUrl ?? null,
    },
  });
};
