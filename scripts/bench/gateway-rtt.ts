/**
 * The database round-trip knob of the gateway benchmark, in workerd: Faucet's gateway
 * under `wrangler dev` with its Durable Objects (the local stack), the workers reaching the database
 * through a delay pipe in front of the local WebSocket proxy, standing for the round trip between an
 * edge location and the database region. At 25, 50 and 100 ms RTT, for a warm wallet (its
 * session's wallet has served calls, so its object holds a lease) and for cold ones (the first call
 * of a brand-new end user, whose session was made through the API beforehand), p50 of: the time from
 * the client's request to the mock upstream receiving it, and the whole call over the client calling
 * the upstream directly. Each call at the RTT is followed by one at 0 ms, so both see the same load;
 * the figure is given as × RTT and as its increase over those 0 ms calls in RTTs: the database round
 * trips the call waited on, which is what the targets count.
 */
import type { Stack } from '../lib/stack.ts';
import type { DelayPipe } from './delay-pipe.ts';
import type { MockUpstream } from './portkey.ts';
import { createFundedSessions } from './stack-sessions.ts';

/** The delayed points; each is measured against 0 ms calls interleaved with its own. */
const RTTS_MS = [25, 50, 100];
const CALLS_PER_POINT = 30;
const WARMUP_CALLS = 3;
/** Round trips waited on are whole: a target is met when the measured increase rounds to it or less. */
const TOLERANCE_RTT = 0.5;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

export interface RttKnobOptions {
  stack: Stack;
  /** The mock upstream the gateway's OpenAI pool points at. */
  upstream: MockUpstream;
  /** The pipe the stack's workers reach the database proxy through. */
  pipe: DelayPipe;
}

interface Timing {
  firstByte: number;
  /** The whole call, over the client calling the upstream directly at the same point. */
  whole: number;
}

interface Figures extends Timing {
  /** The same calls' p50 at 0 ms RTT, interleaved with them (call at the RTT, call at 0 ms, …). */
  base: Timing;
  /** Per measured call (both halves): round trips started through the pipe before the call reached the upstream. */
  beforeUpstream: number[];
  /** Per measured call (both halves), counted at the pipe, background flushes included. */
  connections: number;
  roundTrips: number;
}

interface Point {
  rtt: number;
  direct: number;
  warm: Figures;
  cold: Figures;
}

export async function runRttKnob({ stack, upstream, pipe }: RttKnobOptions): Promise<void> {
  const body = (model: string, feature?: string) =>
    JSON.stringify({ model, ...(feature ? { feature } : {}), max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  const timed = async (url: string, headers: Record<string, string>, payload: string) => {
    const roundTripsAtStart = pipe.roundTrips();
    const started = performance.now();
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
    if (!response.ok) throw new Error(`${new URL(url).pathname} answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
    const ended = performance.now();
    const reached = upstream.lastArrival();
    if (reached < started) throw new Error('the upstream was not reached');
    return { firstByte: reached - started, whole: ended - started, beforeUpstream: upstream.probeAtLastArrival() - roundTripsAtStart };
  };
  const direct = () => timed(`http://127.0.0.1:${upstream.port}/v1/chat/completions`, {}, body('gpt-4o-mini'));
  const gateway = (token: string) =>
    timed(`${stack.gatewayUrl}/v1/chat/completions`, { authorization: `Bearer ${token}` }, body('openai:gpt-4o-mini', stack.featureKey));
  const p50 = (samples: Timing[], directWhole: number): Timing => ({
    firstByte: median(samples.map((one) => one.firstByte)),
    whole: median(samples.map((one) => one.whole)) - directWhole,
  });
  /** `count` calls at `rtt`, each followed by one at 0 ms: the load drifts alike for both halves. */
  const paired = async (rtt: number, directWhole: number, token: () => string): Promise<Figures> => {
    const connectionsBefore = pipe.connections();
    const roundTripsBefore = pipe.roundTrips();
    const at: Array<Timing & { beforeUpstream: number }> = [];
    const base: Array<Timing & { beforeUpstream: number }> = [];
    for (let index = 0; index < CALLS_PER_POINT; index++) {
      pipe.setOneWayDelay(rtt / 2);
      at.push(await gateway(token()));
      pipe.setOneWayDelay(0);
      base.push(await gateway(token()));
    }
    return {
      ...p50(at, directWhole),
      base: p50(base, directWhole),
      beforeUpstream: [...at, ...base].map((one) => one.beforeUpstream),
      connections: (pipe.connections() - connectionsBefore) / (2 * CALLS_PER_POINT),
      roundTrips: (pipe.roundTrips() - roundTripsBefore) / (2 * CALLS_PER_POINT),
    };
  };

  // Every session is made before any timing, at 0 ms RTT: one warm wallet, one cold wallet per measured call.
  pipe.setOneWayDelay(0);
  const [warmToken] = await createFundedSessions(stack, 'rtt-warm', 1);
  const coldTokens = await createFundedSessions(stack, 'rtt-cold', 2 * RTTS_MS.length * CALLS_PER_POINT);

  const points: Point[] = [];
  try {
    for (let index = 0; index < WARMUP_CALLS; index++) {
      await gateway(warmToken!);
      await direct();
    }
    for (const rtt of RTTS_MS) {
      const directSamples = [];
      for (let index = 0; index < CALLS_PER_POINT; index++) directSamples.push(await direct());
      const directWhole = median(directSamples.map((one) => one.whole));
      points.push({
        rtt,
        direct: directWhole,
        warm: await paired(rtt, directWhole, () => warmToken!),
        cold: await paired(rtt, directWhole, () => coldTokens.pop()!),
      });
    }
  } finally {
    pipe.setOneWayDelay(0);
  }

  const targets = { warm: { firstByte: 0, whole: 1 }, cold: { firstByte: 1, whole: undefined } } as const;
  const verdict = (roundTrips: number, target: number | undefined) =>
    target === undefined ? '' : ` ${roundTrips < target + TOLERANCE_RTT ? 'PASS' : 'MISS'} (<= ${target})`;
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)}`;
  const column = 64;
  console.log(
    `-- database round-trip knob: Faucet's gateway in workerd (wrangler dev, with its Durable Objects), the database reached through a delay pipe in front of the local WebSocket proxy (RTT = 2 × one-way delay; the local connect is not delayed); per point ${CALLS_PER_POINT} sequential non-streaming calls at the RTT, each followed by one at 0 ms; p50`,
  );
  console.log(
    '   warm: a session whose wallet already served calls (its object holds a lease); cold: the first call of a brand-new end user (session made through the API before timing)',
  );
  console.log(
    `   "+n RTT" = (p50 at the RTT − p50 of the interleaved 0 ms calls) / RTT: the database round trips waited on; a target is met (PASS) when that rounds to the target or less (< target + ${TOLERANCE_RTT})`,
  );
  console.log(
    '   db conn, db RTs: database connections opened and round trips started through the pipe per call of the point, background flushes included (the WebSocket upgrade counts as one);',
  );
  console.log(
    '   before upstream: round trips started through the pipe between the client sending a call and the upstream receiving it, counted per call: median / max (background flushes in that window count too)',
  );
  console.log(
    `RTT     wallet  ${'to first upstream byte (0 ms beside it)'.padEnd(column)}${'whole call, added over direct (0 ms beside it)'.padEnd(column)}db conn  db RTs  before upstream`,
  );
  const increase = (at: number, base: number, rtt: number) => (at - base) / rtt;
  const figure = (at: number, base: number, rtt: number, target: number | undefined) => {
    const roundTrips = increase(at, base, rtt);
    return `${at.toFixed(1).padStart(6)} ms = ${(at / rtt).toFixed(2)} × RTT (${base.toFixed(1)}) ${signed(roundTrips)} RTT${verdict(roundTrips, target)}`.padEnd(
      column,
    );
  };
  for (const point of points) {
    for (const wallet of ['warm', 'cold'] as const) {
      const figures = point[wallet];
      console.log(
        `${String(point.rtt).padStart(3)} ms  ${wallet}    ${figure(figures.firstByte, figures.base.firstByte, point.rtt, targets[wallet].firstByte)}${figure(figures.whole, figures.base.whole, point.rtt, targets[wallet].whole)}${figures.connections.toFixed(2).padStart(7)}  ${figures.roundTrips.toFixed(2).padStart(5)}  ${String(median(figures.beforeUpstream)).padStart(6)} / ${Math.max(...figures.beforeUpstream)}`,
      );
    }
  }
  // All points at once: the least-squares slope through the origin of the paired increases over the RTT.
  const fits = (['warm', 'cold'] as const).flatMap((wallet) =>
    (['firstByte', 'whole'] as const).map((part) => {
      const numerator = points.reduce((sum, point) => sum + (point[wallet][part] - point[wallet].base[part]) * point.rtt, 0);
      const roundTrips = numerator / points.reduce((sum, point) => sum + point.rtt ** 2, 0);
      return `${wallet} ${part === 'firstByte' ? 'to first upstream byte' : 'whole call'} ${signed(roundTrips)}${verdict(roundTrips, targets[wallet][part])}`;
    }),
  );
  console.log(`over all points (least-squares slope of the paired increase over the RTT): ${fits.join('; ')}`);
  const counted = (['warm', 'cold'] as const).map((wallet) => {
    const all = points.flatMap((point) => point[wallet].beforeUpstream);
    const target = targets[wallet].firstByte;
    return `${wallet} median ${median(all)}, max ${Math.max(...all)} of ${all.length} calls ${median(all) <= target ? 'PASS' : 'MISS'} (<= ${target})`;
  });
  console.log(`database round trips before the first upstream byte, counted at the pipe over all points: ${counted.join('; ')}`);
  console.log(
    `client -> upstream directly, p50 per point: ${points.map((point) => `${point.rtt} ms RTT ${point.direct.toFixed(2)} ms`).join('; ')}`,
  );
}
