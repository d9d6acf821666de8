/**
 * `npm run bench -- surface-latency` (the `surfaces` part is the translation's own cost): the gateway
 * comparison's added latency (gateway-compare.ts) per surface — POST /v1/responses, /v1/messages
 * (Anthropic Messages, `anthropic-version: 2023-06-01`, whole and streamed), /v1/embeddings, and
 * /v1/chat/completions for reference — Faucet's gateway in workerd by Miniflare directly (its wallet
 * object deciding every call, on the local stack's Postgres) beside `@portkey-ai/gateway` on Node,
 * both in front of the same mock upstream answering at once on loopback (portkey.ts: each surface's
 * answer as its API writes it).
 *
 * How each side serves a surface (Portkey 1.15's routes, read in its build):
 * - Responses: Faucet reads it into a chat request, calls OpenAI's /v1/chat/completions and writes the
 *   answer back as a response object; Portkey (provider `openai`) passes it to OpenAI's /v1/responses.
 * - Messages: both call Anthropic's /v1/messages with an Anthropic model — Faucet through its chat
 *   pipeline (Messages read in, the Anthropic adapter out, the answer or its events written back),
 *   Portkey (provider `anthropic`) passing the body through.
 * - Embeddings: both call OpenAI's /v1/embeddings.
 * Portkey routes all three, but as installed here (1.15.2, on Node 22.23) its embeddings (provider
 * `openai`) and its streamed Messages answer 500 on every call (`TypeError: immutable` from its own
 * header update on the answer it passes on): such a route is tried once, left out of the rounds, and
 * Faucet's figure printed alone beside its failure. (Its SSE reader, as read in its build, also waits
 * 25 ms before a stream's first event, which would weigh on a streamed figure of Portkey's.)
 * Added latency = a route's p50 (p99) − the p50 (p99) of the client calling the same path of the
 * upstream directly with the same body. One round is a call to every route of every surface, in a
 * random order per round, so all see the same machine load.
 */
import { loadavg } from 'node:os';
import { type FaucetCopy, percentile, seededRandom, shuffled } from './gateway-compare.ts';
import { startCopy, withBenchStack } from './gateway-stack.ts';
import { type MockUpstream, portkeyHeaders, startPortkey } from './portkey.ts';

const rounds = Number(process.env.FAUCET_BENCH_ROUNDS || 400);
const WARMUP_ROUNDS = 20;

interface Surface {
  label: string;
  path: string;
  /** The body to Faucet (its `provider:model` and feature) and to Portkey and the upstream (the provider's model). */
  body(model: string, feature?: string): object;
  faucetModel: string;
  providerModel: string;
  provider: 'openai' | 'anthropic';
  /** Headers on top of the JSON content type and the credential. */
  headers?: Record<string, string>;
  /** What a whole answer ends with, or (`event: …`) the stream event it holds. */
  ends: string;
}

const messages = [{ role: 'user', content: 'Hello from the benchmark' }];
const anthropic = { 'anthropic-version': '2023-06-01' };
const surfaces: Surface[] = [
  {
    label: 'POST /v1/chat/completions (reference)',
    path: '/v1/chat/completions',
    body: (model, feature) => ({ model, ...(feature ? { feature } : {}), max_tokens: 64, messages }),
    faucetModel: 'openai:gpt-4o-mini',
    providerModel: 'gpt-4o-mini',
    provider: 'openai',
    ends: '}',
  },
  {
    label: 'POST /v1/responses',
    path: '/v1/responses',
    body: (model, feature) => ({ model, ...(feature ? { feature } : {}), max_output_tokens: 64, input: 'Hello from the benchmark' }),
    faucetModel: 'openai:gpt-4o-mini',
    providerModel: 'gpt-4o-mini',
    provider: 'openai',
    ends: '}',
  },
  {
    label: 'POST /v1/messages',
    path: '/v1/messages',
    body: (model, feature) => ({ model, ...(feature ? { feature } : {}), max_tokens: 64, messages }),
    faucetModel: 'anthropic:claude-haiku-4-5',
    providerModel: 'claude-haiku-4-5',
    provider: 'anthropic',
    headers: anthropic,
    ends: '}',
  },
  {
    label: 'POST /v1/messages, stream',
    path: '/v1/messages',
    body: (model, feature) => ({ model, ...(feature ? { feature } : {}), max_tokens: 64, stream: true, messages }),
    faucetModel: 'anthropic:claude-haiku-4-5',
    providerModel: 'claude-haiku-4-5',
    provider: 'anthropic',
    headers: anthropic,
    ends: 'event: message_stop',
  },
  {
    label: 'POST /v1/embeddings',
    path: '/v1/embeddings',
    body: (model, feature) => ({ model, ...(feature ? { feature } : {}), input: 'Hello from the benchmark' }),
    faucetModel: 'openai:text-embedding-3-small',
    providerModel: 'text-embedding-3-small',
    provider: 'openai',
    ends: '}',
  },
];

type Side = 'direct' | 'faucet' | 'portkey';
const sides: Side[] = ['direct', 'faucet', 'portkey'];

/** The whole call's time, the answer read to its end and checked to be whole. */
async function timedCall(url: string, headers: Record<string, string>, body: object, ends: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const elapsed = performance.now() - started;
  if (!response.ok || !(ends.startsWith('event: ') ? text.includes(ends) : text.trimEnd().endsWith(ends))) {
    throw new Error(`${url} answered ${response.status}: ${text.slice(0, 500)}`);
  }
  return elapsed;
}

function callOf(
  surface: Surface,
  side: Side,
  options: { upstream: MockUpstream; portkeyUrl: string; faucet: FaucetCopy; featureKey: string },
) {
  const { upstream, portkeyUrl, faucet, featureKey } = options;
  const extra = surface.headers ?? {};
  if (side === 'faucet') {
    return () =>
      timedCall(
        `${faucet.gateway.url}${surface.path}`,
        { ...extra, authorization: `Bearer ${faucet.token}` },
        surface.body(surface.faucetModel, featureKey),
        surface.ends,
      );
  }
  if (side === 'portkey') {
    return () =>
      timedCall(
        `${portkeyUrl}${surface.path}`,
        { ...portkeyHeaders(upstream, surface.provider), ...extra },
        surface.body(surface.providerModel),
        surface.ends,
      );
  }
  return () => timedCall(`http://127.0.0.1:${upstream.port}${surface.path}`, extra, surface.body(surface.providerModel), surface.ends);
}

export async function runSurfaceLatencyBench(): Promise<void> {
  await withBenchStack(
    (upstream) => ({
      ANTHROPIC_API_KEY: 'sk-ant-bench-not-a-real-key',
      // The host's root, as Anthropic's SDK takes it; the gateway adds /v1.
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${upstream.port}`,
    }),
    async ({ stack, upstream, pipe }) => {
      const faucet = await startCopy(stack, 'Faucet, workerd (Miniflare), metered');
      const portkey = await startPortkey();
      try {
        const allRoutes = surfaces.flatMap((surface, index) =>
          sides.map((side) => ({
            key: `${index}:${side}`,
            call: callOf(surface, side, { upstream, portkeyUrl: portkey.url, faucet, featureKey: stack.featureKey }),
          })),
        );
        // A Portkey route that fails its first call is left out (its failure printed); any other failing fails the bench.
        const portkeyFailures = new Map<string, string>();
        for (const route of allRoutes) {
          try {
            await route.call();
          } catch (error) {
            if (!route.key.endsWith(':portkey')) throw error;
            portkeyFailures.set(route.key, (error as Error).message.replace(/\s+/g, ' ').slice(0, 200));
          }
        }
        const routes = allRoutes.filter((route) => !portkeyFailures.has(route.key));
        for (let round = 0; round < WARMUP_ROUNDS; round++) for (const route of routes) await route.call();
        const samples = new Map(routes.map((route) => [route.key, [] as number[]]));
        const connectionsBefore = pipe.connections();
        const loadBefore = loadavg()[0]!;
        const random = seededRandom(23);
        for (let round = 0; round < rounds; round++) {
          for (const route of shuffled(routes, random)) samples.get(route.key)!.push(await route.call());
        }
        for (const values of samples.values()) values.sort((a, b) => a - b);
        console.log(
          `-- added latency per surface beside @portkey-ai/gateway at 0 ms database RTT: one HTTP client -> gateway -> the same mock upstream on loopback (${rounds} rounds, one call to each of ${routes.length} routes per round in a random order; load average ${loadBefore.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}; ${pipe.connections() - connectionsBefore} database connections opened during the measured rounds)`,
        );
        console.log('   added = the route p50 (p99) − the p50 (p99) of the client calling the same upstream path directly');
        for (const [index, surface] of surfaces.entries()) {
          const at = (side: Side, p: number) => percentile(samples.get(`${index}:${side}`)!, p);
          const added = (side: Side, p: number) => at(side, p) - at('direct', p);
          console.log(`${surface.label.padEnd(38)} direct p50 ${at('direct', 50).toFixed(2)} ms  p99 ${at('direct', 99).toFixed(2)} ms`);
          console.log(`  Faucet  added p50 ${added('faucet', 50).toFixed(2)} ms  p99 ${added('faucet', 99).toFixed(2)} ms`);
          const failure = portkeyFailures.get(`${index}:portkey`);
          if (failure !== undefined) {
            console.log(`  Portkey: no figure, its route failed on this machine: ${failure}`);
            continue;
          }
          console.log(`  Portkey added p50 ${added('portkey', 50).toFixed(2)} ms  p99 ${added('portkey', 99).toFixed(2)} ms`);
          console.log(
            `  Faucet / Portkey: p50 ${(added('faucet', 50) / added('portkey', 50)).toFixed(2)} ×, p99 ${(added('faucet', 99) / added('portkey', 99)).toFixed(2)} ×`,
          );
        }
      } finally {
        await portkey.stop();
        await faucet.gateway.stop();
      }
    },
  );
}
