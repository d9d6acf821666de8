/**
 * The replay tool as an operator runs it (`node scripts/run.mjs scripts/webhook-replay.ts`, what
 * `npm run webhook:replay` runs), as a child process against the running local stack.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { testSecrets } from '../tests/setup/test-secrets.ts';

const stack = inject('stack');
const repoRoot = join(import.meta.dirname, '..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function replay(env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'scripts', 'run.mjs'), 'scripts/webhook-replay.ts'], {
      cwd: repoRoot,
      // Only what the tool needs: no stray payment settings of the machine running the tests.
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const local = (env: Record<string, string>) =>
  replay({ SERVICE_API_BASE_URL: stack.apiUrl, PAYMENT_WEBHOOK_SECRET: testSecrets.STRIPE_WEBHOOK_SECRET, ...env });

async function pendingCheckout(amountUsd: string) {
  const session = await fetch(`${stack.apiUrl}/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
    body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: `replay-${crypto.randomUUID()}` }),
  });
  const { session_token: token } = (await session.json()) as { session_token: string };
  const response = await fetch(`${stack.apiUrl}/v1/user/stripe/checkout-sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ amount_usd: amountUsd }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { checkout_session_id: string; amount_cents: number };
}

async function walletOfCheckout(stripeSessionId: string) {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ balance: string; status: string }>(
      `select w.balance::text as balance, c.status from checkout_sessions c join wallets w on w.id = c.wallet_id
        where c.stripe_session_id = $1`,
      [stripeSessionId],
    );
    return rows[0];
  } finally {
    await client.end();
  }
}

describe('npm run webhook:replay', () => {
  it('refuses a non-local target before sending any request unless ALLOW_REMOTE_WEBHOOK_REPLAY=1', async () => {
    let requests = 0;
    const server = createServer((_request, response) => {
      requests++;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true,"credited":false,"outcome":"ignored"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    // 0.0.0.0 reaches this machine but is not a loopback name, so the tool treats it as remote.
    const remote = `http://0.0.0.0:${(server.address() as AddressInfo).port}`;
    try {
      const inputs = { PAYMENT_WEBHOOK_SECRET: 'whsec_remote', PAYMENT_CHECKOUT_SESSION_ID: 'cs_test_remote', PAYMENT_AMOUNT_CENTS: '100' };
      const refused = await replay({ ...inputs, SERVICE_API_BASE_URL: remote });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('ALLOW_REMOTE_WEBHOOK_REPLAY=1');
      expect(requests).toBe(0);
      const named = await replay({ ...inputs, SERVICE_API_BASE_URL: 'https://payments.example.com' });
      expect(named.code).toBe(2);

      const allowed = await replay({ ...inputs, SERVICE_API_BASE_URL: remote, ALLOW_REMOTE_WEBHOOK_REPLAY: '1' });
      expect(allowed.code).toBe(0);
      expect(requests).toBe(1);
    } finally {
      server.close();
    }
  });

  it('refuses missing or malformed inputs with exit code 2', async () => {
    const noSession = await local({ PAYMENT_AMOUNT_CENTS: '100' });
    expect(noSession.code).toBe(2);
    expect(noSession.stderr).toContain('PAYMENT_CHECKOUT_SESSION_ID is required');
    expect((await local({ PAYMENT_CHECKOUT_SESSION_ID: 'cs_test_x' })).code).toBe(2);
    expect((await local({ PAYMENT_CHECKOUT_SESSION_ID: 'cs_test_x', PAYMENT_AMOUNT_CENTS: '12.5' })).code).toBe(2);
    expect(
      (await local({ PAYMENT_CHECKOUT_SESSION_ID: 'cs_test_x', PAYMENT_AMOUNT_CENTS: '100', REQUIRE_WEBHOOK_CREDIT: 'yes' })).code,
    ).toBe(2);
  });

  it('reports a missing session as acknowledged without credit, and fails on it with REQUIRE_WEBHOOK_CREDIT=1', async () => {
    const inputs = { PAYMENT_CHECKOUT_SESSION_ID: 'cs_test_does_not_exist', PAYMENT_AMOUNT_CENTS: '2500' };
    const lenient = await local(inputs);
    expect(lenient.code).toBe(0);
    expect(lenient.stdout).toContain('not credited');
    expect(lenient.stdout).toContain('unknown_session');
    const strict = await local({ ...inputs, REQUIRE_WEBHOOK_CREDIT: '1' });
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('REQUIRE_WEBHOOK_CREDIT=1');
  });

  it('credits a real pending checkout session end to end, once', async () => {
    const checkout = await pendingCheckout('25.00000000');
    expect(await walletOfCheckout(checkout.checkout_session_id)).toEqual({ balance: '0.00000000', status: 'pending' });
    const inputs = {
      PAYMENT_CHECKOUT_SESSION_ID: checkout.checkout_session_id,
      PAYMENT_AMOUNT_CENTS: String(checkout.amount_cents),
      REQUIRE_WEBHOOK_CREDIT: '1',
    };

    const credited = await local(inputs);
    expect(credited.code, credited.stderr).toBe(0);
    expect(credited.stdout).toContain('credited: event evt_replay_');
    expect(await walletOfCheckout(checkout.checkout_session_id)).toEqual({ balance: '25.00000000', status: 'completed' });

    const again = await local(inputs);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already_completed');
    expect(await walletOfCheckout(checkout.checkout_session_id)).toEqual({ balance: '25.00000000', status: 'completed' });
  });

  it('exits 3 when the webhook refuses the signature, without printing the secret', async () => {
    const checkout = await pendingCheckout('2.00000000');
    const run = await local({
      PAYMENT_CHECKOUT_SESSION_ID: checkout.checkout_session_id,
      PAYMENT_AMOUNT_CENTS: '200',
      PAYMENT_WEBHOOK_SECRET: 'whsec_wrong_secret_value',
    });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('HTTP 400');
    expect(run.stdout + run.stderr).not.toContain('whsec_wrong_secret_value');
    expect(await walletOfCheckout(checkout.checkout_session_id)).toEqual({ balance: '0.00000000', status: 'pending' });
  });
});
