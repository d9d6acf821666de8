/**
 * Throughput beside `@portkey-ai/gateway`: 16 and 64 concurrent HTTP clients, each sending its
 * calls one after another, to Faucet's gateway in workerd (Miniflare, with its Durable Objects) and
 * to Portkey on Node, both in front of the same mock upstream; the client calling the upstream
 * directly is the ceiling. Faucet is measured twice: many end users (one per client, each its own
 * wallet object) and one hot end user (every client on the same session, so one wallet object
 * decides every call). Each point runs in several rounds, the routes in a rotating order per round,
 * so load on the shared machine falls on all alike. Errors are counted, not thrown: a refused or
 * failed call counts by its status (or `network`) and not as a call served. Each route's calls are
 * timed alone; the CPU every process on the machine used is counted over them and the moment after,
 * while the wallet objects book them, so the split says where a call's CPU went (bookings included).
 */
import { loadavg } from 'node:os';
import { cpuBetween, cpuGroups, cpuSnapshot, type CpuGroup } from './process-cpu.ts';

const CONCURRENCY = [16, 64] as const;
const CALLS_PER_CLIENT = 10;
const ROUNDS = 3;
/** After a route's calls: WALLET_FLUSH_INTERVAL_MS and a margin, for its bookings to be made (and counted as its CPU). */
const settleMs = 1_500;

/** One call of a route by client `client`; resolves to the response (any status). */
type Route = (client: number) => Promise<Response>;

interface Tally {
  served: number;
  seconds: number;
  errors: Map<string, number>;
  /** CPU milliseconds every process on the machine used while the route ran, by group. */
  cpu: Record<CpuGroup, number>;
}

const newTally = (): Tally => ({
  served: 0,
  seconds: 0,
  errors: new Map(),
  cpu: Object.fromEntries(cpuGroups.map((group) => [group, 0])) as Record<CpuGroup, number>,
});

async function runClients(route: Route, clients: number, tally: Tally, callsPerClient = CALLS_PER_CLIENT): Promise<void> {
  const started = performance.now();
  const cpuBefore = cpuSnapshot();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let index = 0; index < callsPerClient; index++) {
        let failure: string | undefined;
        try {
          const response = await route(client);
          const body = await response.text();
          if (!response.ok) failure = `${response.status} ${errorCode(body)}`.trim();
        } catch (error) {
          failure = `network (${(error as Error).message})`;
        }
        if (failure === undefined) tally.served += 1;
        else tally.errors.set(failure, (tally.errors.get(failure) ?? 0) + 1);
      }
    }),
  );
  tally.seconds += (performance.now() - started) / 1000;
  // The calls' bookings are the route's work too: a wallet object books within a second of an answer.
  // Counted before the next route starts, so neither is charged with the other's.
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  const cpu = cpuBetween(cpuBefore, cpuSnapshot());
  for (const group of cpuGroups) tally.cpu[group] += cpu[group];
}

/** The error envelope's code, when the body is one. */
function errorCode(body: string): string {
  try {
    return String((JSON.parse(body) as { error?: { code?: unknown } }).error?.code ?? '');
  } catch {
    return '';
  }
}

export interface ThroughputRoutes {
  direct: Route;
  portkey: Route;
  /** Faucet with client `client`'s own end user (at least 64 sessions behind it). */
  faucetManyUsers: Route;
  /** Faucet with every client on one end user's session. */
  faucetHotUser: Route;
  /** The workerd proxy of a few lines with one confirmed object write per call before the upstream, an object per client. */
  writeFloor: Route;
}

const labels: Record<keyof ThroughputRoutes, string> = {
  direct: 'client -> upstream directly (ceiling)',
  portkey: 'Portkey (Node, no metering)',
  faucetManyUsers: 'Faucet, workerd, many end users',
  faucetHotUser: 'Faucet, workerd, one hot end user',
  writeFloor: 'floor: workerd proxy + 1 confirmed write',
};

export async function measureThroughput(routes: ThroughputRoutes): Promise<void> {
  const names = Object.keys(routes) as Array<keyof ThroughputRoutes>;
  console.log(
    `-- throughput beside @portkey-ai/gateway: concurrent clients, ${CALLS_PER_CLIENT} sequential calls each, ${ROUNDS} rounds per point (routes in a rotating order), the same mock upstream; load average ${loadavg()[0]!.toFixed(1)}`,
  );
  // Warm-up, one call per client on every route: Faucet's wallets take their leases, connections open.
  const warmUp = newTally();
  for (const name of names) await runClients(routes[name], Math.max(...CONCURRENCY), warmUp, 1);
  for (const clients of CONCURRENCY) {
    const tallies = Object.fromEntries(names.map((name) => [name, newTally()]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let offset = 0; offset < names.length; offset++) {
        const name = names[(round + offset) % names.length]!;
        await runClients(routes[name], clients, tallies[name]!);
      }
    }
    const rate = (name: keyof ThroughputRoutes) => tallies[name]!.served / tallies[name]!.seconds;
    for (const name of names) {
      const tally = tallies[name]!;
      const failed = [...tally.errors.values()].reduce((sum, count) => sum + count, 0);
      const kinds = [...tally.errors].map(([kind, count]) => `${count} × ${kind}`).join(', ');
      console.log(
        `${String(clients).padStart(2)} clients  ${labels[name].padEnd(40)} ${String(Math.round(rate(name))).padStart(5)} calls/s  errors ${failed} of ${tally.served + failed}${kinds ? ` (${kinds})` : ''}`,
      );
    }
    // Where each call's CPU went, every process on the machine counted (2 CPUs shared by all of them).
    for (const name of ['portkey', 'writeFloor', 'faucetManyUsers', 'faucetHotUser'] as const) {
      const tally = tallies[name]!;
      const perCall = (group: CpuGroup) => tally.cpu[group] / Math.max(1, tally.served);
      const total = cpuGroups.reduce((sum, group) => sum + perCall(group), 0);
      const parts = cpuGroups.filter((group) => perCall(group) >= 0.05).map((group) => `${group} ${perCall(group).toFixed(2)}`);
      console.log(
        `${String(clients).padStart(2)} clients  CPU per call, ${labels[name]}: ${total.toFixed(2)} ms (${parts.join(', ')}; over its calls and the ${settleMs / 1000} s after them)`,
      );
    }
    for (const name of ['faucetManyUsers', 'faucetHotUser'] as const) {
      const ratio = rate(name) / rate('portkey');
      const clean = tallies[name]!.errors.size === 0;
      console.log(
        `${String(clients).padStart(2)} clients  ${labels[name]} = ${ratio.toFixed(2)} × Portkey's calls/s (target >= 1 ×, no errors): ${ratio >= 1 && clean ? 'PASS' : 'MISS'}`,
      );
    }
  }
}
