declare namespace Cloudflare {
  interface Env extends import('../shared/env.ts').Env {
    TEST_DATABASE_ADMIN_URL: string;
    TEST_DATABASE_URL_PREFIX: string;
  }
}
