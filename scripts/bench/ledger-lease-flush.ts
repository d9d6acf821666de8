/**
 * The wallet object's real flush (issue 19): `settleLease` (faucet_settle_lease), one statement that
 * writes the call records of the calls the object authorized against its lease, books their
 * settlements and renews the lease. Each writer stands for one wallet object: it takes its lease
 * (untimed: the cold wallet's statement), then flushes its settled calls in batches, each call with
 * its gateway_calls record, as the object sends them (booking keyed `call:<id>`, naming its call,
 * receivable allowed), and at the end releases the lease (untimed: the idle release).
 */
import { sha256Hex } from '#shared/crypto.ts';
import type { LedgerDatabase } from '#shared/ledger/database.ts';
import { parseWireAmount } from '#shared/money/index.ts';
import type { RatedUsage } from '#shared/rating/index.ts';
import { settleLease, type LeasedCallRecord } from '#shared/wallet/settle-lease.ts';

/** The lease the object asks for after each flush (WALLET_LEASE_USD's default chunk), and its life. */
const LEASE_TARGET = parseWireAmount('1.00000000');
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

/** Bookings flushed, the seconds and statements the flushes took (the lease's taking and release not counted). */
export async function measureLeaseFlush(
  db: LedgerDatabase,
  options: LeaseFlushOptions,
): Promise<{ bookings: number; seconds: number; roundTrips: number }> {
  const fingerprint = await sha256Hex('bench');
  const leases = options.endUserIds.map((endUserId, writer) => ({ endUserId, leaseKey: `lease:bench-${options.label}-${writer}` }));
  const renew = (lease: (typeof leases)[number], keep: boolean) =>
    settleLease(db, {
      ...lease,
      calls: [],
      bookings: [],
      target: keep ? LEASE_TARGET : parseWireAmount('0.00000000'),
      keep,
      ttlSeconds: LEASE_TTL_SECONDS,
    });
  for (const lease of leases) await renew(lease, true);

  let flushes = 0;
  const started = performance.now();
  await Promise.all(
    leases.map(async (lease) => {
      for (let offset = 0; offset < options.perWriter; offset += options.batchSize) {
        const count = Math.min(options.batchSize, options.perWriter - offset);
        const calls: LeasedCallRecord[] = Array.from({ length: count }, () => {
          const id = crypto.randomUUID();
          const authorizedAt = new Date();
          return {
            id,
            moneyKey: `call:${id}`,
            clientRequestId: id,
            fingerprint,
            appId: options.appId,
            endUserId: lease.endUserId,
            featureKey: 'chat',
            routeMode: 'platform',
            provider: options.rated.provider,
            model: options.rated.model,
            boundInputTokens: 1_000,
            boundOutputTokens: 500,
            deadlineAt: new Date(authorizedAt.getTime() + 300_000),
            createdAt: authorizedAt,
            developerPricePerMtokUsd: null,
            openFeeUsd: null,
            developerShareBps: 0,
            platformMarkupBps: null,
            platformFeeBps: null,
            fallbackModels: null,
          };
        });
        flushes += 1;
        const result = await settleLease(db, {
          ...lease,
          calls,
          bookings: calls.map((call) => ({
            requestId: call.moneyKey,
            clientRequestId: call.clientRequestId,
            callId: call.id,
            allowReceivable: true,
            appId: options.appId,
            endUserId: lease.endUserId,
            featureKey: 'chat',
            rated: options.rated,
            providerCredentialId: null,
          })),
          target: LEASE_TARGET,
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
