/**
 * `POST /v1/admin/provider-keys/re-encrypt`: step 2 of an encryption-key rotation
 * (docs/provider-keys.md). Re-encrypts stored keys under the current key version, a bounded number
 * per call; call again while `remaining` is above zero.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { errorResponses } from '#shared/openapi.ts';
import { keyringFrom } from '#shared/provider-keys/keyring.ts';
import { reEncryptProviderKeys } from '#shared/provider-keys/re-encrypt.ts';
import { pushKeysReEncrypted } from '#shared/wallet/wallet-notices.ts';
import { reEncryptTraceHeaders } from '#shared/traces/trace-export.ts';
import { reEncryptWebhookSecrets } from '#shared/webhooks/endpoints.ts';
import { reEncryptSigningSecrets } from '../identity/signing-secrets.ts';

const ReEncryptResponse = z
  .object({
    current_key_version: z.number().int(),
    re_encrypted: z.number().int(),
    unreadable: z.number().int().openapi({ description: 'Keys under a version this deployment cannot read (missing or wrong key)' }),
    remaining: z.number().int().openapi({ description: 'Keys still under an older version' }),
    signing_secrets: z
      .object({ re_encrypted: z.number().int(), unreadable: z.number().int(), remaining: z.number().int() })
      .openapi({ description: 'The same for the HS256 signing secrets of `signed` apps that still verify' }),
    webhook_secrets: z
      .object({ re_encrypted: z.number().int(), unreadable: z.number().int(), remaining: z.number().int() })
      .openapi({ description: 'The same for the signing secrets of webhook endpoints (docs/webhooks.md)' }),
    trace_headers: z
      .object({ re_encrypted: z.number().int(), unreadable: z.number().int(), remaining: z.number().int() })
      .openapi({ description: "The same for apps' trace-export headers (docs/traces.md)" }),
    wallet_objects_told: z.number().int().openapi({
      description: 'Wallet objects told to forget their cached contexts (which hold the former ciphertext) after keys were re-encrypted',
    }),
  })
  .openapi('ProviderKeyReEncryption');

const route = createRoute({
  method: 'post',
  path: '/v1/admin/provider-keys/re-encrypt',
  summary:
    'Re-encrypt stored provider keys, app signing secrets and webhook signing secrets under the current PROVIDER_KEY_ENCRYPTION_KEY version',
  middleware: [requireAdmin()] as const,
  responses: {
    200: { description: 'Batch done', content: { 'application/json': { schema: ReEncryptResponse } } },
    ...errorResponses(401, 429),
  },
});

export function registerAdminProviderKeyRoutes(app: ServiceApp): void {
  app.openapi(route, async (c) => {
    const keyring = await keyringFrom(c.env.PROVIDER_KEY_ENCRYPTION_KEY);
    const result = await reEncryptProviderKeys(c.var.database().db, keyring, {
      actor: { type: 'admin', id: null },
      requestId: c.var.requestId,
    });
    const secrets = await reEncryptSigningSecrets(c.var.database().db, keyring);
    const webhookSecrets = await reEncryptWebhookSecrets(c.var.database().db, keyring);
    const traceHeaders = await reEncryptTraceHeaders(c.var.database().db, keyring);
    // The objects' cached contexts hold the keys' former ciphertext: they read them again.
    const told = result.reEncrypted > 0 ? await pushKeysReEncrypted(c.env, c.var.database().db, c.var.logger) : 0;
    return c.json(
      {
        current_key_version: result.currentKeyVersion,
        re_encrypted: result.reEncrypted,
        unreadable: result.unreadable,
        remaining: result.remaining,
        signing_secrets: { re_encrypted: secrets.reEncrypted, unreadable: secrets.unreadable, remaining: secrets.remaining },
        webhook_secrets: {
          re_encrypted: webhookSecrets.reEncrypted,
          unreadable: webhookSecrets.unreadable,
          remaining: webhookSecrets.remaining,
        },
        trace_headers: { re_encrypted: traceHeaders.reEncrypted, unreadable: traceHeaders.unreadable, remaining: traceHeaders.remaining },
        wallet_objects_told: told,
      },
      200,
    );
  });
}
