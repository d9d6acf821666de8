/**
 * What the bridge adds to a local call: the same non-streaming chat sent straight to a fake
 * OpenAI-compatible server and through the bridge, sequentially and with concurrent clients,
 * on loopback. Prints p50/p99 and requests per second for both. `npm run bench -w bridge`.
 */
import { createLogger } from '../src/log';
import { startFakeUpstream } from '../test/support/fake-upstream';
import { startTestBridge } from '../test/support/start-test-bridge';
import { parseUpstreamUrl } from '../src/upstream/upstream-kind';

const requests = Number(process.env.BENCH_REQUESTS ?? 2000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const body = JSON.stringify({ model: 'llama3.2:3b', messages: [{ role: 'user', content: 'Say hello.' }] });

async function run(url: string, clients: number): Promise<{ p50: number; p99: number; perSecond: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next++ < requests) {
        const begin = performance.now();
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        latencies.push(performance.now() - begin);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { p50: at(0.5), p99: at(0.99), perSecond: latencies.length / seconds };
}

const upstream = await startFakeUpstream();
const bridge = await startTestBridge({ upstream: parseUpstreamUrl(upstream.url), log: createLogger(() => {}) });
try {
  await run(bridge.url, 4); // warm-up
  for (const clients of [1, concurrency]) {
    const direct = await run(upstream.url, clients);
    const viaBridge = await run(bridge.url, clients);
    const format = (r: typeof direct) => `p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${r.perSecond.toFixed(0)} req/s`;
    process.stdout.write(
      `${clients} client(s), ${requests} requests\n  direct:     ${format(direct)}\n  via bridge: ${format(viaBridge)}\n`,
    );
  }
} finally {
  await bridge.close();
  await upstream.close();
}
