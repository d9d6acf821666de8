import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from '../../test/harness.ts';
import { FaucetError } from '../wire/errors.ts';
import { formatUsd, usdFromUnits } from '../money/index.ts';
import { adjustWallet } from './adjust-wallet.ts';
import { bookUsage } from './book-usage.ts';
import { releaseHold, reserveHold } from './holds.ts';
import { rollUpBalances } from './roll-up.ts';
import {
  chargeOf,
  createTestUser,
  ledgerViolations,
  openLedgerDatabase,
  type LedgerTestDatabase,
  type TestUser,
} from '../../test/ledger-kit.ts';
import { getWalletBalance } from './wallet-balance.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
});
afterAll(async () => {
  await database.close();
});

const units = fc.bigInt({ min: 1n, max: 300_000_000n });
const who = fc.nat({ max: 1 });
const step = fc.oneof(
  fc.record({ op: fc.constant('credit' as const), who, units, kind: fc.constantFrom('adjustment' as const, 'refund' as const) }),
  fc.record({ op: fc.constant('debit' as const), who, units, kind: fc.constantFrom('adjustment' as const, 'chargeback' as const) }),
  fc.record({ op: fc.constant('hold' as const), who, units }),
  fc.record({ op: fc.constant('settle' as const), pick: fc.nat(), units: fc.bigInt({ min: 0n, max: 300_000_000n }) }),
  fc.record({ op: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('charge' as const), who, units }),
  fc.record({ op: fc.constant('rollUp' as const) }),
);

/** What the ledger should hold, in 1e-8 USD units. */
interface Model {
  balances: bigint[];
  holds: { requestId: string; who: number; units: bigint }[];
}

const held = (model: Model, who: number, except?: string) =>
  model.holds.filter((hold) => hold.who === who && hold.requestId !== except).reduce((sum, hold) => sum + hold.units, 0n);

describe('ledger under random operation sequences', () => {
  it('keeps every transaction balanced, every wallet equal to its entries and never negative', async () => {
    let run = 0;
    await fc.assert(
      // Each run opens both wallets with a credit, so that holds and debits meet real balances.
      fc.asyncProperty(units, units, fc.array(step, { minLength: 1, maxLength: 14 }), async (openingA, openingB, steps) => {
        run += 1;
        const users: TestUser[] = [await createTestUser(testEnv), await createTestUser(testEnv)];
        const model: Model = { balances: [0n, 0n], holds: [] };
        let sequence = 0;
        const nextId = () => `prop-${users[0]!.walletId}-${run}-${sequence++}`;
        const opening = [
          { op: 'credit' as const, who: 0, units: openingA, kind: 'adjustment' as const },
          { op: 'credit' as const, who: 1, units: openingB, kind: 'adjustment' as const },
        ];

        for (const current of [...opening, ...steps]) {
          switch (current.op) {
            case 'credit':
            case 'debit': {
              const user = users[current.who]!;
              // An operator's debit of every kind (a chargeback too) only within the available balance.
              const fits = current.op === 'credit' || model.balances[current.who]! - held(model, current.who) >= current.units;
              const outcome = await adjustWallet(database.db, {
                walletId: user.walletId,
                kind: current.kind,
                direction: current.op,
                amount: usdFromUnits(current.units),
                reason: 'property test',
                requestId: nextId(),
              }).then(
                () => 'posted',
                (error: unknown) => (FaucetError.isInstance(error) ? error.code : 'unexpected'),
              );
              expect(outcome).toBe(fits ? 'posted' : 'insufficient_balance');
              if (fits) model.balances[current.who]! += current.op === 'credit' ? current.units : -current.units;
              break;
            }
            case 'hold': {
              const requestId = nextId();
              const fits = model.balances[current.who]! - held(model, current.who) >= current.units;
              const result = await reserveHold(database.db, {
                endUserId: users[current.who]!.endUserId,
                requestId,
                amount: usdFromUnits(current.units),
              });
              expect(result.outcome).toBe(fits ? 'reserved' : 'insufficient_balance');
              if (fits) model.holds.push({ requestId, who: current.who, units: current.units });
              break;
            }
            case 'settle': {
              const hold = model.holds[current.pick % Math.max(model.holds.length, 1)];
              if (!hold) break;
              const user = users[hold.who]!;
              const fits = model.balances[hold.who]! - held(model, hold.who, hold.requestId) >= current.units;
              const result = await bookUsage(database.db, {
                requestId: hold.requestId,
                appId: user.appId,
                endUserId: user.endUserId,
                featureKey: 'chat',
                rated: chargeOf(usdFromUnits(current.units)),
              });
              expect(result.outcome).toBe(fits ? 'booked' : 'insufficient_balance');
              if (fits) {
                model.balances[hold.who]! -= current.units;
                model.holds = model.holds.filter((candidate) => candidate !== hold);
              }
              break;
            }
            case 'release': {
              const hold = model.holds[current.pick % Math.max(model.holds.length, 1)];
              if (!hold) break;
              expect(await releaseHold(database.db, hold.requestId)).toBe(true);
              model.holds = model.holds.filter((candidate) => candidate !== hold);
              break;
            }
            case 'rollUp': {
              await rollUpBalances(database.db);
              break;
            }
            case 'charge': {
              const user = users[current.who]!;
              const fits = model.balances[current.who]! - held(model, current.who) >= current.units;
              const result = await bookUsage(database.db, {
                requestId: nextId(),
                appId: user.appId,
                endUserId: user.endUserId,
                featureKey: 'chat',
                rated: chargeOf(usdFromUnits(current.units)),
              });
              expect(result.outcome).toBe(fits ? 'booked' : 'insufficient_balance');
              if (fits) model.balances[current.who]! -= current.units;
              break;
            }
          }

          expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
          for (const [index, user] of users.entries()) {
            const wallet = await getWalletBalance(database.db, user.walletId);
            expect(formatUsd(wallet!.balanceUsd)).toBe(formatUsd(usdFromUnits(model.balances[index]!)));
            expect(formatUsd(wallet!.heldUsd)).toBe(formatUsd(usdFromUnits(held(model, index))));
          }
        }
      }),
      { numRuns: 20 },
    );
  });
});
