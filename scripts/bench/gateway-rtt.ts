/**
 * The database round-trip knob of the gateway benchmark (issue 19), in workerd: Faucet's gateway
 * under `wrangler dev` with its Durable Objects (the local stack), the workers reaching the database
 * through a delay pipe in front of the local WebSocket proxy, standing for the round trip between an
 * edge location and the database region. At each RTT, for a warm wallet (its session's wallet has
 * served calls, so its object holds a lease) and for cold ones (the first call of a brand-new end
 * user, whose session was made through the API beforehand), p50 of: the time from the client's
 * request to the mock upstream receiving it, and the whole call over the client calling the upstream
 * directly. Both as × RTT and as the increase over the same figure at 0 ms RTT in RTTs: the
 * database round trips the call waited on, which is what the targets count.
 */
import type { Stack } from '../lib/stack.ts';
import type { DelayPipe } from './delay-pipe.ts';
import type { MockUpstream } from './portkey.ts';
import { createFundedSessions } from './stack-sessions.ts';

const RTTS_MS = [0, 25, 50, 100];
const CALLS_PER_POINT = 40;
const WARMUP_CALLS = 3;
/** A figure meets a round-trip target when its increase over 0 ms is within this of it: the noise of one p50 here. */
const TOLERANCE_RTT = 0.25;

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

interface Figures {
  firstByte: number;
  whole: number;
  /** Per measured call, counted at the pipe (background flushes included). */
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
    const started = performance.now();
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
    if (!response.ok) throw new Error(`${new URL(url).pathname} answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
    const ended = performance.now();
    const reached = upstream.lastArrival();
    if (reached < started) throw new Error('the upstream was not reached');
    return { firstByte: reached - started, whole: ended - started };
  };
  const direct = () => timed(`http://127.0.0.1:${upstream.port}/v1/chat/completions`, {}, body('gpt-4o-mini'));
  const gateway = (token: string) =>
    timed(`${stack.gatewayUrl}/v1/chat/completions`, { authorization: `Bearer ${token}` }, body('openai:gpt-4o-mini', stack.featureKey));
  const sample = async (count: number, run: (index: number) => Promise<{ firstByte: number; whole: number }>) => {
    const connectionsBefore = pipe.connections();
    const roundTripsBefore = pipe.roundTrips();
    const samples = [];
    for (let index = 0; index < count; index++) samples.push(await run(index));
    return {
      firstByte: median(samples.map((one) => one.firstByte)),
      whole: median(samples.map((one) => one.whole)),
      connections: (pipe.connections() - connectionsBefore) / count,
      roundTrips: (pipe.roundTrips() - roundTripsBefore) / count,
    };
  };

  // Every session is made before any timing, at 0 ms RTT: one warm wallet, one cold wallet per measured call.
  pipe.setOneWayDelay(0);
  const [warmToken] = await createFundedSessions(stack, 'rtt-warm', 1);
  const coldTokens = await createFundedSessions(stack, 'rtt-cold', RTTS_MS.length * CALLS_PER_POINT);

  const points: Point[] = [];
  try {
    for (const rtt of RTTS_MS) {
      pipe.setOneWayDelay(rtt / 2);
      for (let index = 0; index < WARMUP_CALLS; index++) {
        await gateway(warmToken!);
        await direct();
      }
      const directWhole = (await sample(CALLS_PER_POINT, direct)).whole;
      const warm = await sample(CALLS_PER_POINT, () => gateway(warmToken!));
      const cold = await sample(CALLS_PER_POINT, () => gateway(coldTokens.pop()!));
      points.push({
        rtt,
        direct: directWhole,
        warm: { ...warm, whole: warm.whole - directWhole },
        cold: { ...cold, whole: cold.whole - directWhole },
      });
    }
  } finally {
    pipe.setOneWayDelay(0);
  }

  const targets = { warm: { firstByte: 0, whole: 1 }, cold: { firstByte: 1, whole: undefined } } as const;
  const verdict = (roundTrips: number, target: number | undefined) =>
    target === undefined ? '' : ` ${roundTrips <= target + TOLERANCE_RTT ? 'PASS' : 'MISS'} (<= ${target})`;
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)}`;
  const column = 53;
  console.log(
    `-- database round-trip knob: Faucet's gateway in workerd (wrangler dev, with its Durable Objects), the database reached through a delay pipe in front of the local WebSocket proxy (RTT = 2 × one-way delay; the local connect is not delayed); ${CALLS_PER_POINT} sequential non-streaming calls per point, p50`,
  );
  console.log(
    '   warm: a session whose wallet already served calls (its object holds a lease); cold: the first call of a brand-new end user (session made through the API before timing)',
  );
  console.log(
    `   "+n RTT" = increase over the same figure at 0 ms, in RTTs (the database round trips waited on); a target is met (PASS) when that is <= target + ${TOLERANCE_RTT}`,
  );
  console.log(
    '   db conn, db RTs: database connections opened and round trips started through the pipe per measured call, background flushes included (the WebSocket upgrade counts as one)',
  );
  console.log(`RTT     wallet  ${'to first upstream byte'.padEnd(column)}${'whole call, added over direct'.padEnd(column)}db conn  db RTs`);
  const base = points[0]!;
  const figure = (value: number, baseValue: number, rtt: number, target: number | undefined) => {
    const milliseconds = `${value.toFixed(1).padStart(6)} ms`;
    if (rtt === 0) return milliseconds.padEnd(column);
    const increase = (value - baseValue) / rtt;
    return `${milliseconds} = ${(value / rtt).toFixed(2)} × RTT, ${signed(increase)} RTT${verdict(increase, target)}`.padEnd(column);
  };
  for (const point of points) {
    for (const wallet of ['warm', 'cold'] as const) {
      const figures = point[wallet];
      console.log(
        `${String(point.rtt).padStart(3)} ms  ${wallet}    ${figure(figures.firstByte, base[wallet].firstByte, point.rtt, targets[wallet].firstByte)}${figure(figures.whole, base[wallet].whole, point.rtt, targets[wallet].whole)}${figures.connections.toFixed(2).padStart(7)}  ${figures.roundTrips.toFixed(2).padStart(5)}`,
      );
    }
  }
  // One noisy 0 ms figure moves every increase above; the slope over all four points is steadier.
  const slope = (values: number[]) => {
    const rtts = points.map((point) => point.rtt);
    const meanRtt = rtts.reduce((sum, rtt) => sum + rtt, 0) / rtts.length;
    const meanValue = values.reduce((sum, value) => sum + value, 0) / values.length;
    const covariance = rtts.reduce((sum, rtt, index) => sum + (rtt - meanRtt) * (values[index]! - meanValue), 0);
    return covariance / rtts.reduce((sum, rtt) => sum + (rtt - meanRtt) ** 2, 0);
  };
  const fits = (['warm', 'cold'] as const).flatMap((wallet) =>
    (['firstByte', 'whole'] as const).map((part) => {
      const roundTrips = slope(points.map((point) => point[wallet][part]));
      return `${wallet} ${part === 'firstByte' ? 'to first upstream byte' : 'whole call'} ${signed(roundTrips)}${verdict(roundTrips, targets[wallet][part])}`;
    }),
  );
  console.log(`least-squares slope over 0-100 ms (ms per ms of RTT = round trips waited on): ${fits.join('; ')}`);
  console.log(
    `client -> upstream directly, p50 per point: ${points.map((point) => `${point.rtt} ms RTT ${point.direct.toFixed(2)} ms`).join('; ')}`,
  );
}
