/** The fixed secrets of the test environment (they match wrangler.toml `[env.test.vars]`). */
import type { LocalSecrets } from '../../scripts/lib/dev-vars.ts';

export const testSecrets: LocalSecrets = {
  ADMIN_TOKEN: 'test-admin-token-0123456789abcdef',
  SESSION_HASH_SECRET: 'test-session-hash-secret',
  PROVIDER_KEY_ENCRYPTION_KEY: 'v1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
  DEMO_DEVELOPER_KEY: 'fdk_test_demo_developer_key_0123456789abcdef',
  STRIPE_SECRET_KEY: 'sk_test_faucet_fake_key',
  STRIPE_WEBHOOK_SECRET: 'whsec_test_faucet_fake_secret',
};

export const templateDatabase = 'faucet_template';
