/**
 * The workers' env under `npm start` (docs/operations.md, "Local stack"): a worker setting the user
 * wrote in `.dev.vars` wins over every default the stack sets; only the wiring to the stack's own
 * PostgreSQL stays the stack's (and the user's value is reported, not silently dropped); what a caller
 * passes explicitly (tests, benches) wins over both.
 */
import { describe, expect, it } from 'vitest';
import { generateSecrets, parseEnvFile } from './dev-vars.ts';
import { workerEnv } from './worker-env.ts';

const stack = {
  databaseUrl: 'postgres://faucet:faucet@127.0.0.1:54329/faucet',
  wsProxy: '127.0.0.1:54330',
  apiUrl: 'http://127.0.0.1:8787',
  gatewayUrl: 'http://127.0.0.1:8788',
  stripeTarget: { STRIPE_API_HOST: '127.0.0.1', STRIPE_API_PORT: '12111', STRIPE_API_PROTOCOL: 'http' },
};

/** `.dev.vars` as npm start reads it: the generated secrets plus what the user wrote. */
const devVars = (written: string) => ({ ...generateSecrets(), ...parseEnvFile(written) });

describe('worker env of the local stack', () => {
  it('takes SESSION_TTL_SECONDS from .dev.vars over the default 900', () => {
    const { env } = workerEnv({ devVars: devVars('SESSION_TTL_SECONDS="60"\n'), stack });
    expect(env.SESSION_TTL_SECONDS).toBe('60');
  });

  it('takes every setting the stack has a default for from .dev.vars when the user wrote it', () => {
    const written = {
      ENVIRONMENT: 'test',
      SESSION_TTL_SECONDS: '120',
      API_BASE_URL: 'https://api.tunnel.example',
      GATEWAY_BASE_URL: 'https://gateway.tunnel.example',
      STRIPE_API_HOST: 'stripe-mock.internal',
      STRIPE_API_PORT: '12112',
      STRIPE_API_PROTOCOL: 'https',
    };
    const text = Object.entries(written)
      .map(([key, value]) => `${key}="${value}"`)
      .join('\n');
    const { env, ignored } = workerEnv({ devVars: devVars(text), stack });
    expect(env).toMatchObject(written);
    expect(ignored).toEqual([]);
  });

  it("uses the stack's defaults for what the user did not write", () => {
    const { env } = workerEnv({ devVars: devVars(''), stack });
    expect(env).toMatchObject({
      ENVIRONMENT: 'development',
      SESSION_TTL_SECONDS: '900',
      API_BASE_URL: stack.apiUrl,
      GATEWAY_BASE_URL: stack.gatewayUrl,
      ...stack.stripeTarget,
    });
  });

  it("keeps the stack's own database wiring and reports the user's value as ignored", () => {
    const { env, ignored } = workerEnv({
      devVars: devVars('DATABASE_URL="postgres://elsewhere/db"\nDATABASE_WS_PROXY="10.0.0.1:1"\n'),
      stack,
    });
    expect(env).toMatchObject({ DATABASE_URL: stack.databaseUrl, DATABASE_WS_PROXY: stack.wsProxy });
    expect(ignored.sort()).toEqual(['DATABASE_URL', 'DATABASE_WS_PROXY']);
  });

  it('passes the secrets and every other setting through, but not the demo developer key', () => {
    const values = devVars('PLATFORM_MARKUP_BPS="1500"\n');
    const { env } = workerEnv({ devVars: values, stack });
    expect(env).toMatchObject({
      SESSION_HASH_SECRET: values.SESSION_HASH_SECRET,
      ADMIN_TOKEN: values.ADMIN_TOKEN,
      PLATFORM_MARKUP_BPS: '1500',
    });
    expect(env).not.toHaveProperty('DEMO_DEVELOPER_KEY');
  });

  it("lets a caller's explicit values (tests, benches) win over .dev.vars and the wiring", () => {
    const { env } = workerEnv({
      devVars: devVars('SESSION_TTL_SECONDS="60"\nLOG_LEVEL="debug"\n'),
      stack,
      sessionTtlSeconds: 5,
      workerVars: { LOG_LEVEL: 'warn', DATABASE_WS_PROXY: '127.0.0.1:9999' },
    });
    expect(env).toMatchObject({ SESSION_TTL_SECONDS: '5', LOG_LEVEL: 'warn', DATABASE_WS_PROXY: '127.0.0.1:9999' });
  });
});
