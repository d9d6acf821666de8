/**
 * The same thing sent many times at once — what a double-clicking user, a retrying SDK or an
 * attacker racing the server produces. Each must take effect once, and no racer may see a 500.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fund, settled } from '../../../test/gateway-kit.ts';
import { adminToken, api, call, createSession, createTestEnv, developerKey, gateway, sql, type TestEnv } from '../../../test/harness.ts';
import { localUsageReport } from './abuse-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const racers = 10;
const race = <T>(send: () => Promise<T>) => Promise.all(Array.from({ length: racers }, send));
const statuses = (responses: Response[]) => responses.map((response) => response.status).sort();

describe('duplicate requests racing each other', () => {
  it('one gateway request id sent at once: one call served and charged, the rest refused with 409', async () => {
    const session = await createSession(testEnv);
    await fund(testEnv, session.walletId, '1.00000000');
    const requestId = `race-${crypto.randomUUID()}`;
    const responses = await race(() =>
      call(gateway(), testEnv, '/v1/chat/completions', {
        token: session.token,
        headers: { 'x-request-id': requestId },
        json: { model: 'mock:echo', feature: 'chat', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      }),
    );
    expect(statuses(responses)).toEqual([200, ...Array(racers - 1).fill(409)]);
    await settled(testEnv);
    const rows = await sql(testEnv, 'select 1 from usage_events where client_request_id = $1', [requestId]);
    expect(rows).toHaveLength(1);
  });

  it('one adjustment idempotency key sent at once: one transaction, every racer answered 201 with it', async () => {
    const session = await createSession(testEnv);
    const key = `race-${crypto.randomUUID()}`;
    const responses = await race(() =>
      call(api(), testEnv, `/v1/admin/wallets/${session.walletId}/adjustments`, {
        token: adminToken,
        json: { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason: 'race', idempotency_key: key },
      }),
    );
    expect(statuses(responses)).toEqual(Array(racers).fill(201));
    const ids = new Set(
      await Promise.all(responses.map(async (response) => ((await response.json()) as { transaction_id: string }).transaction_id)),
    );
    expect(ids.size).toBe(1);
    const [wallet] = await sql<{ balance: string }>(testEnv, 'select balance::text from wallets where id = $1', [session.walletId]);
    expect(wallet?.balance).toBe('1.00000000');
  });

  it('one local usage report sent at once: recorded once, every racer answered 200', async () => {
    const session = await createSession(testEnv);
    const report = localUsageReport(`race-${crypto.randomUUID()}`, session.userRef);
    const responses = await race(() => call(api(), testEnv, '/v1/usage/local', { token: session.token, json: report }));
    expect(statuses(responses)).toEqual(Array(racers).fill(200));
    const recorded = await Promise.all(responses.map(async (response) => ((await response.json()) as { recorded: boolean }).recorded));
    expect(recorded.filter(Boolean)).toHaveLength(1);
  });

  it('sessions for one new external user created at once: all 201, one end user, one wallet', async () => {
    const externalUserId = `race-${crypto.randomUUID()}`;
    const responses = await race(() =>
      call(api(), testEnv, '/v1/sessions', {
        json: { public_app_id: 'app_demo_local', external_user_id: externalUserId },
        token: developerKey,
      }),
    );
    expect(statuses(responses)).toEqual(Array(racers).fill(201));
    const [counts] = await sql<{ users: number; wallets: number }>(
      testEnv,
      `select count(distinct s.end_user_id)::int as users, count(distinct w.id)::int as wallets
         from virtual_sessions s join wallets w on w.end_user_id = s.end_user_id
        where s.token_hash = any($1)`,
      [
        await Promise.all(
          responses.map(async (response) => {
            const token = ((await response.json()) as { session_token: string }).session_token;
            const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token)));
            return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
          }),
        ),
      ],
    );
    expect(counts).toEqual({ users: 1, wallets: 1 });
  });

  it('one provider key added at once: one stored, the rest refused with 409', async () => {
    const session = await createSession(testEnv);
    const responses = await race(() =>
      call(api(), testEnv, '/v1/user/provider-keys', {
        token: session.token,
        json: { provider: 'openai', api_key: `sk-proj-${crypto.randomUUID().replace(/-/g, '')}abcd` },
      }),
    );
    expect(statuses(responses)).toEqual([201, ...Array(racers - 1).fill(409)]);
  });

  it('one payout approved and paid by racing operators: one transition each, the rest 409', async () => {
    const [developer] = await sql<{ wallet_id: string }>(testEnv, `select id as wallet_id from wallets where kind = 'developer' limit 1`);
    await call(api(), testEnv, `/v1/admin/wallets/${developer!.wallet_id}/adjustments`, {
      token: adminToken,
      json: { kind: 'adjustment', direction: 'credit', amount_usd: '3.00000000', reason: 'race payout' },
    });
    const created = await call(api(), testEnv, '/v1/admin/payouts/run-mock', { token: adminToken, json: { threshold_usd: '1.00000000' } });
    const [payout] = ((await created.json()) as { data: Array<{ id: string }> }).data;
    const approvals = await race(() =>
      call(api(), testEnv, `/v1/admin/payouts/${payout!.id}/approve`, { token: adminToken, json: { operator_note: 'race' } }),
    );
    expect(statuses(approvals)).toEqual([200, ...Array(racers - 1).fill(409)]);
    const payments = await race(() => call(api(), testEnv, `/v1/admin/payouts/${payout!.id}/mark-paid`, { token: adminToken, json: {} }));
    expect(statuses(payments)).toEqual([200, ...Array(racers - 1).fill(409)]);
    const reconciliation = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
    expect(((await reconciliation.json()) as { ok: boolean }).ok).toBe(true);
  });
});
