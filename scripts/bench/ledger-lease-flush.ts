/**
 * The wallet object's real flush: `flushLease` (faucet_settle_lease), the one statement
 * the object sends from its alarm, which writes the records of the calls it authorized against its
 * lease, books their settlements and renews the lease. Each writer stands for one wallet object: it
 * takes its lease (untimed: the cold wallet's statement), then flushes its settled calls in batches,
 * each call's record and booking in the form the object keeps them (the record written at authorize,
 * the booking encoded by the gateway when it settled the call: `bookingElement`, keyed `call:<id>`,
 * naming its call, receivable allowed), so the flush does only what the object's does. At the end it
 * releases the lease (untimed: the idle release).
 */
import { sha256Hex } from '#shared/crypto.ts';
import { bookingElement } from '#shared/ledger/book-usage-batch.ts';
import type { SqlDatabase } from '#shared/query.ts';
import type { RatedUsage } from '#shared/rating/index.ts';
import { flushLease } from '#shared/wallet/settle-lease.ts';

/** The lease the object asks for after each flush (WALLET_LEASE_USD's default chunk), and its life. */
const LEASE_TARGET_USD = '1.00000000';
const LEASE_TTL_SECONDS = 600;

export interface LeaseFlushOptions {
  appId: string;
  /** One end user per writer (wallet object). */
  endUserIds: string[];
  label: string;
  perWriter: number;
  batchSize: number;
  rated: RatedUsage;
}

/** A settled call as the object holds it: its gateway_calls record and its booking. */
function settledCall(options: LeaseFlushOptions, endUserId: string, fingerprint: string) {
  const id = crypto.randomUUID();
  const authorizedAt = Date.now();
  const record = {
    id,
    money_key: `call:${id}`,
    client_request_id: id,
    fingerprint,
    app_id: options.appId,
    end_user_id: endUserId,
    feature_key: 'chat',
    route_mode: 'platform',
    provider: options.rated.provider,
    model: options.rated.model,
    provider_credential_id: null,
    bound_input_tokens: 1_000,
    bound_output_tokens: 500,
    deadline_at: new Date(authorizedAt + 300_000).toISOString(),
    created_at: new Date(authorizedAt).toISOString(),
    developer_price_per_mtok_usd: null,
    open_fee_usd: null,
    developer_share_bps: 0,
    platform_markup_bps: null,
    platform_fee_bps: null,
    fallback_models: null,
    bound_cache_lifetime: null,
  };
  const booking = bookingElement({
    requestId: record.money_key,
    clientRequestId: id,
    callId: id,
    allowReceivable: true,
    appId: options.appId,
    endUserId,
    featureKey: 'chat',
    rated: options.rated,
    providerCredentialId: null,
  });
  return { record, booking };
}

/** Bookings flushed, the seconds and statements the flushes took (the lease's taking and release not counted). */
export async function measureLeaseFlush(
  db: SqlDatabase,
  options: LeaseFlushOptions,
): Promise<{ bookings: number; seconds: number; roundTrips: number }> {
  const fingerprint = await sha256Hex('bench');
  const leases = options.endUserIds.map((endUserId, writer) => ({ endUserId, leaseKey: `lease:bench-${options.label}-${writer}` }));
  const renew = (lease: (typeof leases)[number], keep: boolean) =>
    flushLease(db, {
      ...lease,
      calls: [],
      bookings: [],
      targetUsd: keep ? LEASE_TARGET_USD : '0.00000000',
      keep,
      ttlSeconds: LEASE_TTL_SECONDS,
    });
  for (const lease of leases) await renew(lease, true);
  // What each object holds when its alarm fires: the settled calls, batch by batch.
  const batchesOf = leases.map((lease) => {
    const batches: Array<ReturnType<typeof settledCall>[]> = [];
    for (let offset = 0; offset < options.perWriter; offset += options.batchSize) {
      const count = Math.min(options.batchSize, options.perWriter - offset);
      batches.push(Array.from({ length: count }, () => settledCall(options, lease.endUserId, fingerprint)));
    }
    return batches;
  });

  let flushes = 0;
  const started = performance.now();
  await Promise.all(
    leases.map(async (lease, writer) => {
      for (const batch of batchesOf[writer] ?? []) {
        flushes += 1;
        const result = await flushLease(db, {
          ...lease,
          calls: batch.map((call) => call.record),
          bookings: batch.map((call) => call.booking),
          targetUsd: LEASE_TARGET_USD,
          keep: true,
          ttlSeconds: LEASE_TTL_SECONDS,
        });
        const notBooked = result.results.find((one) => one.outcome !== 'booked');
        if (notBooked) throw new Error(`leased booking not booked: ${JSON.stringify(notBooked)}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const lease of leases) await renew(lease, false);
  return { bookings: leases.length * options.perWriter, seconds, roundTrips: flushes };
}
