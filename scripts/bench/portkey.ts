/**
 * Added latency beside `@portkey-ai/gateway`, measured the same way for both: one HTTP
 * client → the gateway → the same mock OpenAI-compatible upstream, an HTTP server on loopback that
 * answers at once. Faucet's gateway runs in workerd with its Durable Objects, by Miniflare directly
 * (gateway-miniflare.ts; the same gateway under `wrangler dev` is shown beside it), metering and
 * booking every call; Portkey runs on Node and meters nothing. The floor is the client calling the
 * upstream directly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { freePort } from '../lib/ports.ts';

export interface MockUpstream {
  port: number;
  /** `performance.now()` of the last request's arrival. */
  lastArrival(): number;
  /** What the `probe` given at start read when the last request arrived (e.g. a counter of database round trips). */
  probeAtLastArrival(): number;
  close(): Promise<void>;
}

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'Metered access lets users pay for what they use.' }, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 20, completion_tokens: 11, total_tokens: 31 },
});

export async function startMockUpstream(probe: () => number = () => 0): Promise<MockUpstream> {
  let arrival = 0;
  let probed = 0;
  const server: Server = createServer((request, response) => {
    arrival = performance.now();
    probed = probe();
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
      response.end(completion);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    lastArrival: () => arrival,
    probeAtLastArrival: () => probed,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface Portkey {
  url: string;
  stop(): Promise<void>;
}

/** Portkey's gateway on Node (its published `start-server.js`), headless, on a free port. */
export async function startPortkey(): Promise<Portkey> {
  const port = await freePort();
  const require = createRequire(import.meta.url);
  const entry = join(dirname(require.resolve('@portkey-ai/gateway/package.json')), 'build', 'start-server.js');
  const child: ChildProcess = spawn(process.execPath, [entry, `--port=${port}`, '--headless'], {
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += String(chunk)));
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    try {
      if ((await fetch(`${url}/`)).ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || attempt > 100) throw new Error(`Portkey did not start: ${stderr.slice(-500)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Headers that send a Portkey call to the mock upstream as an OpenAI-compatible custom host. */
export function portkeyHeaders(upstream: MockUpstream): Record<string, string> {
  return {
    'content-type': 'application/json',
    authorization: 'Bearer sk-bench-not-a-real-key',
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `http://127.0.0.1:${upstream.port}/v1`,
  };
}
