/**
 * `npm run webhook:replay`: post one signed checkout completion to the service's Stripe webhook.
 * Inputs (environment): SERVICE_API_BASE_URL (default http://127.0.0.1:8787), PAYMENT_WEBHOOK_SECRET
 * (default: .dev.vars for a local target), PAYMENT_CHECKOUT_SESSION_ID, PAYMENT_AMOUNT_CENTS,
 * REQUIRE_WEBHOOK_CREDIT=1, ALLOW_REMOTE_WEBHOOK_REPLAY=1. Exit codes: docs/payments.md.
 */
import { join } from 'node:path';
import { ReplayExit, replayWebhook } from './lib/webhook-replay.ts';

const result = await replayWebhook(process.env, { repoRoot: join(import.meta.dirname, '..') });
(result.exitCode === ReplayExit.ok ? console.log : console.error)(`webhook:replay: ${result.message}`);
process.exit(result.exitCode);
