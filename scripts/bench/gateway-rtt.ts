/**
 * The database round-trip knob of the gateway benchmark (issue 19): the same in-process gateway,
 * Neon driver and local WebSocket proxy, with a delay pipe between the driver and the proxy standing
 * for the edge-to-database-region round trip. At each RTT it prints the time from the client's
 * request to the upstream receiving it (the upstream, in this process, notes when it is reached) and
 * the whole call (the upstream answers at once, so that is all added latency), p50, with their ratio
 * to the RTT and the increase over 0 ms RTT in RTTs — the database round trips each one waits on.
 */
import { createGatewayApp } from '../../workers/gateway/src/app.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import type { Env } from '#shared/env.ts';
import { startDelayPipe } from './delay-pipe.ts';

const RTTS_MS = [0, 25, 50, 100];
const CALLS_PER_RTT = 30;
const WARMUP_CALLS = 3;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

export interface RttKnobOptions {
  /** Gateway env reaching the database through the local proxy at `proxyPort`. */
  env: Env;
  proxyPort: number;
  /** A session with a funded wallet. */
  token: string;
}

export async function runRttKnob(options: RttKnobOptions): Promise<void> {
  let reachedAt = 0;
  const upstream: FetchFunction = async () => {
    reachedAt = performance.now();
    return Response.json({
      id: 'chatcmpl-rtt',
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 12, completion_tokens: 1, total_tokens: 13 },
    });
  };
  const app = createGatewayApp({ upstreamFetch: upstream });

  const oneCall = async (env: Env) => {
    const pending: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException: () => undefined, props: {} };
    const started = performance.now();
    reachedAt = 0;
    const response = await app.fetch(
      new Request('http://gateway.bench/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.token}` },
        body: JSON.stringify({ model: 'openai:gpt-4o-mini', feature: 'chat', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
      }),
      env,
      ctx as unknown as ExecutionContext,
    );
    if (response.status !== 200) throw new Error(`gateway answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
    const ended = performance.now();
    await Promise.all(pending);
    if (reachedAt === 0) throw new Error('the upstream was not reached');
    return { firstByte: reachedAt - started, whole: ended - started };
  };

  console.log(
    `-- database round-trip knob: in-process gateway, Neon driver, delay pipe in front of the local proxy (${CALLS_PER_RTT} sequential non-streaming calls per RTT, p50)`,
  );
  console.log('RTT      to first upstream byte          whole call (added latency)');
  let base: { firstByte: number; whole: number } | undefined;
  for (const rtt of RTTS_MS) {
    const pipe = await startDelayPipe({ host: '127.0.0.1', port: options.proxyPort }, rtt / 2);
    try {
      const env = { ...options.env, DATABASE_WS_PROXY: `127.0.0.1:${pipe.port}` };
      for (let index = 0; index < WARMUP_CALLS; index++) await oneCall(env);
      const samples = [];
      for (let index = 0; index < CALLS_PER_RTT; index++) samples.push(await oneCall(env));
      const firstByte = percentile(
        samples.map((sample) => sample.firstByte),
        50,
      );
      const whole = percentile(
        samples.map((sample) => sample.whole),
        50,
      );
      base ??= { firstByte, whole };
      const ratio = (value: number, baseline: number) =>
        rtt === 0 ? '' : ` = ${(value / rtt).toFixed(2)} × RTT (+${((value - baseline) / rtt).toFixed(2)} RTT over 0 ms)`;
      console.log(
        `${String(rtt).padStart(3)} ms   ${firstByte.toFixed(1).padStart(6)} ms${ratio(firstByte, base.firstByte).padEnd(48)}  ${whole.toFixed(1).padStart(6)} ms${ratio(whole, base.whole)}`,
      );
    } finally {
      await pipe.close();
    }
  }
}
