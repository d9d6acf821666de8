/** `npm start`: the whole local stack with persistent data under `.faucet/`, then waits for Ctrl-C. */
import { join } from 'node:path';
import { startDemoServer } from '../sdk/demo/serve.ts';
import { ensureDevVars } from './lib/dev-vars.ts';
import { portOrFree } from './lib/ports.ts';
import { repoRoot, startStack } from './lib/stack.ts';

const secrets = ensureDevVars(join(repoRoot, '.dev.vars'));
console.log('faucet: starting PostgreSQL, the WebSocket proxy, three workers and the console…');
const stack = await startStack({
  stateDir: join(repoRoot, '.faucet'),
  secrets,
  ports: { api: 8787, gateway: 8788, metrics: 8789, console: 8791, postgres: 54329, proxy: 54330 },
  console: true,
  verbose: process.env.FAUCET_VERBOSE === '1',
});

const demoPage = await startDemoServer({
  port: await portOrFree(8790),
  apiBaseUrl: stack.apiUrl,
  gatewayBaseUrl: stack.gatewayUrl,
  publicAppId: stack.publicAppId,
  developerKey: stack.developerKey,
  userId: stack.demoExternalUserId,
  featureKey: stack.featureKey,
});

// The demo app's session policy is `server` (docs/identity.md): your backend mints sessions with the developer key.
const curl = [
  `TOKEN=$(curl -s -X POST ${stack.apiUrl}/v1/sessions -H "authorization: Bearer ${stack.developerKey}" \\`,
  `  -H 'content-type: application/json' -d '{"public_app_id":"${stack.publicAppId}","external_user_id":"${stack.demoExternalUserId}"}' \\`,
  `  | sed -E 's/.*"session_token":"([^"]+)".*/\\1/')`,
  `curl -s ${stack.gatewayUrl}/v1/chat/completions -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\`,
  `  -d '{"model":"mock:echo","feature":"${stack.featureKey}","messages":[{"role":"user","content":"Hello Faucet"}]}'`,
].join('\n');

console.log(`
Faucet is running (local, embedded PostgreSQL; data in .faucet/, secrets in .dev.vars)

  Control API     ${stack.apiUrl}        (OpenAPI: ${stack.apiUrl}/openapi.json)
  Gateway         ${stack.gatewayUrl}/v1     (OpenAPI: ${stack.gatewayUrl}/openapi.json)
  Metrics worker  ${stack.metricsUrl}
  Console         ${stack.consoleUrl}   (sign in with the developer key or the admin token below)
  Demo page       ${demoPage.url}${stack.stripeFakeUrl ? `\n  Stripe (fake)   ${stack.stripeFakeUrl}   (test-mode stand-in; set real sk_test_ keys in .dev.vars to use Stripe)` : ''}
  PostgreSQL      ${stack.databaseUrl}

  Demo public_app_id   ${stack.publicAppId}   (feature "${stack.featureKey}", model mock:echo, user "${stack.demoExternalUserId}" with 10 USD)
  Admin token          ${stack.adminToken}
  Developer key        ${stack.developerKey}

Try it:
${curl}

Ctrl-C stops everything; \`npm run db:reset\` wipes the data.
`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  console.log('faucet: stopping…');
  await demoPage.close();
  await stack.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
