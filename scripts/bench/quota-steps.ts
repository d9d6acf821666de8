/**
 * The `quota` part of `npm run bench`: holds that grow with the answer (docs/quota.md). The gateway
 * in workerd by Miniflare directly (gateway-miniflare.ts), its wallet objects on the local stack's
 * database (embedded PostgreSQL, sessions made through the API), the upstream a provider in the
 * isolate that generates a 32,000-token answer as fast as it is read (10 tokens, 40 bytes, a chunk;
 * its usage at the end). Two copies run side by side, identical but for QUOTA_STEP_TOKENS: the
 * defaults (a first grant of two 1024-token steps, then a step asked 512 tokens ahead), and 32000 as
 * the reference (the first grant covers the whole answer: no step). Calls alternate between the two,
 * so a change of load on the machine falls on both alike. Printed:
 * 1. the wallet object's Postgres statements (its snapshot's `statements`) run while steps were
 *    decided, per step, and the whole before/after snapshot difference over the streamed calls;
 * 2. the steps granted for one 32,000-token answer (grants that grew the stored call's bound),
 *    beside what the stream's own rule (QuotaMeter, driven here in Node) says;
 * 3. p50 and p99 of the whole call for each copy, and the difference per step;
 * 4. the smallest balance that can start a Claude Code turn (holdBounds, in Node), before and after.
 *
 * The steps and the statements are counted by a subclass of the wallet object in the bundled entry
 * (written at run time beside the bundle, as gateway-catalog.ts writes its own): the object's code is
 * the gateway's, each method awaited as is, the counters read around it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { unstable_readConfig } from 'wrangler';
import { quotaSettings } from '#shared/authorize/quota-steps.ts';
import type { Env } from '#shared/env.ts';
import { formatUsd, type Usd } from '#shared/money/index.ts';
import { sentRequest } from '../../workers/gateway/src/fallback/hold-candidates.ts';
import { grantHold, heldInput, holdBounds } from '../../workers/gateway/src/metering/hold-bounds.ts';
import { surfaceCallOfChatBody } from '../../workers/gateway/src/routes/chat-surface.ts';
import { parseModel } from '../../workers/gateway/src/routing/parse-model.ts';
import { QuotaMeter } from '../../workers/gateway/src/streaming/quota-meter.ts';
import { chatRequestOfMessages } from '../../workers/gateway/src/surfaces/messages/chat-request-of-messages.ts';
import { parseMessagesRequest } from '../../workers/gateway/src/surfaces/messages/messages-request.ts';
import { generateSecrets, parseEnvFile } from '../lib/dev-vars.ts';
import { repoRoot, startStack, type Stack } from '../lib/stack.ts';
import { startGatewayInMiniflare, type MiniflareGateway } from './gateway-miniflare.ts';
import { createFundedSessions } from './stack-sessions.ts';

/** The answer each call streams, in tokens, and its chunks' size (each token the 4 bytes of "word"). */
const ANSWER_TOKENS = 32_000;
const TOKENS_PER_CHUNK = 10;
const BYTES_PER_TOKEN = 4;
const WARMUP_CALLS = 3;
const MEASURED_CALLS = Number(process.env.FAUCET_BENCH_QUOTA_CALLS || 20);
/** The reference copy's step: its first grant (two steps, within the whole bound) covers the answer. */
const REFERENCE_STEP_TOKENS = String(ANSWER_TOKENS);
const MODEL = 'openai:gpt-4o';

/** What the subclass of the wallet object counts (the entry below), read through `/bench/quota`. */
interface QuotaCounters {
  /** Steps that grew a call's stored bound. */
  steps: number;
  /** `extend` answered granted (a step asked again would be granted without growing). */
  grantedAnswers: number;
  refusedAnswers: number;
  /** Postgres statements the object ran while an `extend` was awaited, and the steps during which it ran any (a renewal). */
  stepStatements: number;
  stepsWithStatements: number;
  /** Milliseconds the object spent in `extend` (workerd's clock, which moves on I/O: the storage write and any statement). */
  stepMs: number;
  /** The same around `authorize`, `settle` and `alarm` (the flush of settled calls). */
  authorizeStatements: number;
  settleStatements: number;
  alarmStatements: number;
  /** Per settled call: the steps it was granted and the output bound it was held for at its settlement. */
  settled: Array<{ steps: number; boundOutputTokens: number }>;
  /** Each step's round trip as the gateway's stream waited for it, in ms (the isolate's clock, which moves on I/O). */
  stepRoundTrips: number[];
  snapshot: { statements: number; leaseUsd: string; committedUsd: string; inFlight: number; unflushed: number };
}

/**
 * The gateway's entry with the generating provider in the isolate and the wallet object counted,
 * written at run time beside the bundle (a module in the repo that nothing imports would only serve
 * this benchmark).
 */
function writeEntry(dir: string): string {
  const from = (path: string) => JSON.stringify(join(repoRoot, path));
  const entry = join(dir, 'quota-entry', 'index.ts');
  mkdirSync(dirname(entry), { recursive: true });
  writeFileSync(
    entry,
    `// @ts-nocheck  written by scripts/bench/quota-steps.ts for the benchmark's run
import { createGatewayApp } from ${from('workers/gateway/src/app.ts')};
import { WalletObject as GatewayWalletObject } from ${from('workers/gateway/src/wallet/wallet-object.ts')};
import { walletOfToken } from ${from('workers/shared/auth/session-token.ts')};

const ANSWER_TOKENS = ${ANSWER_TOKENS};
const TOKENS_PER_CHUNK = ${TOKENS_PER_CHUNK};
const encoder = new TextEncoder();
const frame = { id: 'chatcmpl-quota-bench', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o' };
const event = (value) => encoder.encode('data: ' + JSON.stringify(value) + '\\n\\n');
const chunk = (delta, finish = null) => ({ ...frame, choices: [{ index: 0, delta, finish_reason: finish }] });
const words = (tokens) => 'word'.repeat(tokens);
const fullChunk = event(chunk({ content: words(TOKENS_PER_CHUNK) }));

/** A provider that generates the answer as fast as it is read, then reports its usage. */
async function generate(request) {
  const body = await request.json();
  const limit = Math.min(ANSWER_TOKENS, body.max_completion_tokens ?? body.max_tokens ?? ANSWER_TOKENS);
  let output = 0;
  let ended = false;
  const stream = new ReadableStream({
    pull(controller) {
      if (ended) return;
      if (output >= limit) {
        ended = true;
        controller.enqueue(event(chunk({}, 'stop')));
        controller.enqueue(event({ ...frame, choices: [], usage: { prompt_tokens: 12, completion_tokens: output, total_tokens: 12 + output } }));
        controller.enqueue(encoder.encode('data: [DONE]\\n\\n'));
        controller.close();
        return;
      }
      const tokens = Math.min(TOKENS_PER_CHUNK, limit - output);
      const first = output === 0;
      output += tokens;
      controller.enqueue(
        first || tokens !== TOKENS_PER_CHUNK ? event(chunk({ ...(first ? { role: 'assistant' } : {}), content: words(tokens) })) : fullChunk,
      );
    },
    cancel() {
      ended = true;
    },
  });
  return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
}

/** The gateway's wallet object, its methods awaited as they are, Postgres statements and grown bounds counted around them. */
export class WalletObject extends GatewayWalletObject {
  bench = {
    steps: 0,
    grantedAnswers: 0,
    refusedAnswers: 0,
    stepStatements: 0,
    stepsWithStatements: 0,
    stepMs: 0,
    authorizeStatements: 0,
    settleStatements: 0,
    alarmStatements: 0,
    settled: [],
  };
  stepsOfCall = new Map();

  async counted(field, work) {
    const before = this.state.statements;
    try {
      return await work();
    } finally {
      this.bench[field] += this.state.statements - before;
    }
  }

  async authorize(request) {
    return this.counted('authorizeStatements', () => super.authorize(request));
  }

  async extend(callId, step) {
    const boundBefore = this.state.calls.get(callId)?.record.bound_output_tokens ?? 0;
    const statementsBefore = this.state.statements;
    const startedAt = Date.now();
    const answer = await this.counted('stepStatements', () => super.extend(callId, step));
    this.bench.stepMs += Date.now() - startedAt;
    if (this.state.statements > statementsBefore) this.bench.stepsWithStatements += 1;
    if (answer.outcome !== 'granted') {
      this.bench.refusedAnswers += 1;
      return answer;
    }
    this.bench.grantedAnswers += 1;
    const boundAfter = this.state.calls.get(callId)?.record.bound_output_tokens ?? 0;
    if (boundAfter > boundBefore) {
      this.bench.steps += 1;
      this.stepsOfCall.set(callId, (this.stepsOfCall.get(callId) ?? 0) + 1);
    }
    return answer;
  }

  async settle(callId, settlement) {
    const call = this.state.calls.get(callId);
    if (call !== undefined && call.state === 'in_flight') {
      this.bench.settled.push({ steps: this.stepsOfCall.get(callId) ?? 0, boundOutputTokens: call.record.bound_output_tokens });
      this.stepsOfCall.delete(callId);
    }
    return this.counted('settleStatements', () => super.settle(callId, settlement));
  }

  async alarm(...args) {
    return this.counted('alarmStatements', () => super.alarm(...args));
  }

  async benchQuota() {
    const snapshot = await this.snapshot();
    return { ...this.bench, settled: [...this.bench.settled], snapshot };
  }
}

const app = createGatewayApp({ upstreamFetch: generate });

/** Each step's round trip as the gateway's stream waits for it (this isolate's clock, which moves on I/O). */
const stepRoundTrips = [];
const timedStub = (stub) =>
  new Proxy(stub, {
    get(target, property) {
      if (property !== 'extend') {
        // A stub's methods are RPC properties (their own \`bind\` would be one too): called through it.
        const value = target[property];
        return typeof value === 'function' ? (...args) => target[property](...args) : value;
      }
      return async (...args) => {
        const startedAt = performance.now();
        try {
          return await target.extend(...args);
        } finally {
          stepRoundTrips.push(performance.now() - startedAt);
        }
      };
    },
  });
const timedNamespace = (namespace) =>
  new Proxy(namespace, {
    get(target, property) {
      if (property === 'get') return (...args) => timedStub(target.get(...args));
      const value = target[property];
      return typeof value === 'function' ? (...args) => target[property](...args) : value;
    },
  });

export default {
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname === '/bench/quota') {
      const token = (request.headers.get('authorization') ?? '').replace(/^Bearer /, '');
      const name = walletOfToken(token);
      if (name === null) return new Response('no wallet', { status: 400 });
      const counters = await env.WALLET.get(env.WALLET.idFromName(name)).benchQuota();
      return Response.json({ ...counters, stepRoundTrips });
    }
    return app.fetch(request, { ...env, WALLET: timedNamespace(env.WALLET) }, ctx);
  },
};
`,
  );
  return entry;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

interface Copy {
  label: string;
  gateway: MiniflareGateway;
  token: string;
}

async function readCounters(copy: Copy): Promise<QuotaCounters> {
  const response = await fetch(`${copy.gateway.url}/bench/quota`, { headers: { authorization: `Bearer ${copy.token}` } });
  if (!response.ok) throw new Error(`/bench/quota answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as QuotaCounters;
}

/** One streamed 32,000-token call: its whole time (to the last byte read), checked afterwards to be whole and not cut. */
async function streamedCall(copy: Copy, featureKey: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${copy.gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${copy.token}` },
    body: JSON.stringify({
      model: MODEL,
      feature: featureKey,
      stream: true,
      max_tokens: ANSWER_TOKENS,
      messages: [{ role: 'user', content: 'Write a long story' }],
    }),
  });
  const text = await response.text();
  const elapsed = performance.now() - started;
  if (response.status !== 200) throw new Error(`${copy.label}: the gateway answered ${response.status}: ${text.slice(0, 500)}`);
  let contentBytes = 0;
  const finishReasons: string[] = [];
  let cutReason: unknown;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const data = JSON.parse(line.slice(6)) as {
      choices?: Array<{ delta?: { content?: string }; finish_reason?: string | null }>;
      faucet?: { cut_reason?: string };
      error?: unknown;
    };
    if (data.error !== undefined) throw new Error(`${copy.label}: the stream ended in an error: ${JSON.stringify(data.error)}`);
    for (const choice of data.choices ?? []) {
      contentBytes += Buffer.byteLength(choice.delta?.content ?? '');
      if (choice.finish_reason) finishReasons.push(choice.finish_reason);
    }
    cutReason ??= data.faucet?.cut_reason;
  }
  if (contentBytes !== ANSWER_TOKENS * BYTES_PER_TOKEN || cutReason !== undefined || finishReasons.join() !== 'stop') {
    throw new Error(
      `${copy.label}: the answer was not whole: ${contentBytes} bytes, finish ${finishReasons.join() || 'none'}, cut ${String(cutReason)}`,
    );
  }
  return elapsed;
}

/** The steps the stream's own rule takes for the answer: QuotaMeter in Node, every step granted at once, chunk by chunk. */
export async function stepsByTheRule(stepTokens?: string): Promise<number> {
  const settings = quotaSettings({ QUOTA_STEP_TOKENS: stepTokens });
  const worst = ANSWER_TOKENS;
  const meter = new QuotaMeter(
    { granted: Math.min(worst, 2 * settings.stepTokens), worst, settings, extend: async () => ({ outcome: 'granted' }) },
    () => {
      throw new Error('cut');
    },
  );
  let seen = 0;
  for (let chunk = 0; chunk < ANSWER_TOKENS / TOKENS_PER_CHUNK; chunk++) {
    if ((await meter.admit()) !== null) throw new Error('refused');
    seen += TOKENS_PER_CHUNK * BYTES_PER_TOKEN;
    meter.observe(seen);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return meter.steps;
}

/** The gateway's settings as deployed (wrangler.toml's `env.gateway` vars), for the hold's rating. */
function gatewayVars(): Env {
  const previous = process.env.WRANGLER_LOG;
  process.env.WRANGLER_LOG = 'error';
  try {
    const config = unstable_readConfig({ config: join(repoRoot, 'wrangler.toml'), env: 'gateway' });
    return { ...(config.vars as Record<string, string>) } as unknown as Env;
  } finally {
    if (previous === undefined) delete process.env.WRANGLER_LOG;
    else process.env.WRANGLER_LOG = previous;
  }
}

const paragraph = 'You are Claude Code, an interactive CLI tool that helps users with software engineering tasks. ';

/** About 87 kB of system prompt, tools and a tool loop, as Claude Code sends a turn (Anthropic's Messages API). */
function claudeCodeTurn(options: { thinking: boolean; stream: boolean }): Record<string, unknown> {
  return {
    model: 'anthropic:claude-sonnet-4-5',
    max_tokens: 32_000,
    ...(options.stream ? { stream: true } : {}),
    ...(options.thinking ? { thinking: { type: 'enabled', budget_tokens: 31_999 } } : {}),
    metadata: { user_id: '{"session":"bench"}' },
    system: [
      { type: 'text', text: paragraph },
      { type: 'text', text: paragraph.repeat(390), cache_control: { type: 'ephemeral' } },
    ],
    tools: Array.from({ length: 20 }, (_, index) => ({
      name: `Tool${index}`,
      description: paragraph.repeat(6),
      input_schema: { type: 'object', properties: { path: { type: 'string', description: paragraph } }, required: ['path'] },
    })),
    messages: [
      { role: 'user', content: [{ type: 'text', text: paragraph.repeat(150) }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Tool1', input: { path: 'src/index.ts' } }] },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: paragraph.repeat(200), cache_control: { type: 'ephemeral' } }],
      },
    ],
  };
}

/** The platform hold of a Claude Code turn, as the Messages route computes it (chat request, the candidate's request, holdBounds). */
function claudeCodeHold(env: Env, options: { thinking: boolean; stream: boolean }) {
  const body = claudeCodeTurn(options);
  const { request, model } = surfaceCallOfChatBody(chatRequestOfMessages(parseMessagesRequest(body)), true);
  const reference = parseModel(model);
  const bounds = holdBounds(env, reference, sentRequest(reference, request));
  return { bytes: Buffer.byteLength(JSON.stringify(body)), bounds, reference };
}

export function printClaudeCodeBalance(): void {
  const env = gatewayVars();
  const rows = [
    { label: '(a) streamed, thinking enabled (budget_tokens 31999), as Claude Code sends it', thinking: true, stream: true },
    { label: '(b) streamed, without thinking', thinking: false, stream: true },
    { label: '(c) not streamed, without thinking (read upstream as a stream, answered whole)', thinking: false, stream: false },
  ].map((row) => ({ ...row, ...claudeCodeHold(env, row) }));
  const usd = (amount: Usd | null) => (amount === null ? 'n/a' : `${formatUsd(amount)} USD`);
  console.log(
    `-- 4. smallest balance that can start a Claude Code turn: holdBounds in Node for anthropic:claude-sonnet-4-5 through the Messages route (a ${(rows[0]!.bytes / 1000).toFixed(1)} kB body: system prompt, 20 tools, a tool loop, cache breakpoints; max_tokens 32000), rated with wrangler.toml's gateway vars; the platform hold is the balance the wallet needs`,
  );
  console.log(
    '   before: the call held for its whole bound (input + max_tokens), as every call was before holds grew with the answer; after: holdBounds as it is now',
  );
  for (const row of rows) {
    const { bounds, reference } = row;
    const input = heldInput(bounds);
    const before = grantHold(env, reference, input, bounds.wholeOutputTokens).platform;
    const how = bounds.cuttable
      ? `cuttable: input + a first grant of ${bounds.worstCaseOutputTokens} output tokens`
      : row.thinking
        ? `NOT cuttable (thinking is billed in full, not all of it streamed): keeps the worst case, ${bounds.worstCaseOutputTokens} output tokens`
        : `not cuttable: keeps the worst case, ${bounds.worstCaseOutputTokens} output tokens`;
    console.log(`${row.label.padEnd(80)} before ${usd(before)}  after ${usd(bounds.platform)}  (${how})`);
  }
  const { bounds } = rows[0]!;
  console.log(
    `   input bound ${bounds.worstCaseInputTokens} tokens${bounds.cacheLifetime === '5m' ? ', priced at the cache-write price (the prompt has cache breakpoints)' : ''}${bounds.cacheLifetime === '1h' ? ', priced at the one-hour cache-write price (the prompt has a one-hour breakpoint)' : ''}`,
  );
}

export async function runQuotaStepsBench(): Promise<void> {
  const tmp = join(repoRoot, '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(join(tmp, 'quota-bench-'));
  let stack: Stack | undefined;
  const copies: Copy[] = [];
  try {
    stack = await startStack({
      stateDir: dir,
      secrets: generateSecrets(),
      workerVars: { GATEWAY_RATE_LIMIT_MAX_REQUESTS: '0', API_RATE_LIMIT_MAX_REQUESTS: '0', LOG_LEVEL: 'error' },
    });
    const env = { ...parseEnvFile(readFileSync(stack.workerEnvFile, 'utf8')), OPENAI_API_KEY: 'sk-bench-not-a-real-key' };
    const entry = writeEntry(dir);
    // One end user each (two objects in two runtimes never share a wallet's lease), funded with 100 USD.
    const [defaultToken, referenceToken] = await createFundedSessions(stack, 'quota', 2);
    const started = await Promise.allSettled([
      startGatewayInMiniflare({ stateDir: join(dir, 'defaults'), env, gatewayEntry: entry }),
      startGatewayInMiniflare({
        stateDir: join(dir, 'reference'),
        env: { ...env, QUOTA_STEP_TOKENS: REFERENCE_STEP_TOKENS },
        gatewayEntry: entry,
      }),
    ]);
    const [defaultGateway, referenceGateway] = started.map((result) => (result.status === 'fulfilled' ? result.value : null));
    if (defaultGateway) copies.push({ label: 'defaults', gateway: defaultGateway, token: defaultToken! });
    if (referenceGateway) copies.push({ label: 'reference', gateway: referenceGateway, token: referenceToken! });
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    const [defaults, reference] = copies as [Copy, Copy];
    const defaultSettings = quotaSettings({});

    // Warm both: each wallet object takes its lease, each isolate compiles its paths.
    for (let index = 0; index < WARMUP_CALLS; index++) {
      await streamedCall(defaults, stack.featureKey);
      await streamedCall(reference, stack.featureKey);
    }
    const before = { defaults: await readCounters(defaults), reference: await readCounters(reference) };
    const times = { defaults: [] as number[], reference: [] as number[] };
    for (let round = 0; round < MEASURED_CALLS; round++) {
      const order = round % 2 === 0 ? [defaults, reference] : [reference, defaults];
      for (const copy of order) times[copy.label as 'defaults' | 'reference'].push(await streamedCall(copy, stack.featureKey));
    }
    const after = { defaults: await readCounters(defaults), reference: await readCounters(reference) };

    const counted = (name: 'defaults' | 'reference') => {
      const [was, now] = [before[name], after[name]];
      const difference = (field: keyof Omit<QuotaCounters, 'settled' | 'snapshot' | 'stepRoundTrips'>) => now[field] - was[field];
      return {
        steps: difference('steps'),
        grantedAnswers: difference('grantedAnswers'),
        refusedAnswers: difference('refusedAnswers'),
        stepStatements: difference('stepStatements'),
        stepsWithStatements: difference('stepsWithStatements'),
        stepMs: difference('stepMs'),
        authorizeStatements: difference('authorizeStatements'),
        settleStatements: difference('settleStatements'),
        alarmStatements: difference('alarmStatements'),
        snapshotStatements: now.snapshot.statements - was.snapshot.statements,
        settled: now.settled.slice(was.settled.length),
        stepRoundTrips: now.stepRoundTrips.slice(was.stepRoundTrips.length),
      };
    };
    const measured = counted('defaults');
    const referenceCounted = counted('reference');
    const settledSteps = measured.settled.map((call) => call.steps);
    const steps = measured.steps / MEASURED_CALLS;
    const rule = { defaults: await stepsByTheRule(), reference: await stepsByTheRule(REFERENCE_STEP_TOKENS) };

    console.log(
      `-- holds that grow with the answer: the gateway in workerd (Miniflare) with its wallet objects on the local stack's PostgreSQL; ${MODEL}, streamed, max_tokens ${ANSWER_TOKENS}; the upstream a provider in the isolate generating a ${ANSWER_TOKENS}-token answer (${TOKENS_PER_CHUNK} tokens = ${TOKENS_PER_CHUNK * BYTES_PER_TOKEN} bytes a chunk, as fast as read, usage at the end); each copy's end user funded with 100 USD; ${WARMUP_CALLS} warm-up calls each, then ${MEASURED_CALLS} rounds of one call to each copy (order flipped every round)`,
    );
    console.log(
      `   defaults: QUOTA_STEP_TOKENS ${defaultSettings.stepTokens}, QUOTA_ASK_AHEAD_TOKENS ${defaultSettings.askAheadTokens} (first grant ${2 * defaultSettings.stepTokens}); reference: QUOTA_STEP_TOKENS ${REFERENCE_STEP_TOKENS} (the first grant covers the whole answer: no step)`,
    );
    console.log(
      "   counted by a subclass of the wallet object in the bundled entry: a step = an `extend` that grew the stored call's bound; statements = the object's snapshot `statements` (one Postgres round trip each) read around each method",
    );

    console.log('-- 1. database round trips per quota step while the lease covers it (defaults copy, the measured calls)');
    console.log(
      `statements while steps were decided   ${measured.stepStatements} over ${measured.steps} steps = ${(measured.stepStatements / Math.max(1, measured.steps)).toFixed(3)} per step (steps that ran any, i.e. renewed the lease: ${measured.stepsWithStatements})`,
    );
    console.log(
      `snapshot statements before/after      ${measured.snapshotStatements} over the ${MEASURED_CALLS} calls = flushes of settled calls (alarm) ${measured.alarmStatements} + authorize ${measured.authorizeStatements} + settle ${measured.settleStatements} + steps ${measured.stepStatements}${measured.snapshotStatements === measured.alarmStatements + measured.authorizeStatements + measured.settleStatements + measured.stepStatements ? '' : ' + other'}; ${(measured.snapshotStatements / Math.max(1, measured.steps)).toFixed(3)} per step with the flushes counted in`,
    );
    console.log(
      `   lease after: ${after.defaults.snapshot.leaseUsd} USD, committed ${after.defaults.snapshot.committedUsd} USD; reference copy: ${referenceCounted.snapshotStatements} statements over its ${MEASURED_CALLS} calls (flushes ${referenceCounted.alarmStatements})`,
    );

    console.log(`-- 2. steps for a ${ANSWER_TOKENS}-token answer with the defaults`);
    console.log(
      `granted by the wallet object          ${steps.toFixed(2)} per call (${measured.steps} over ${MEASURED_CALLS} calls; per call min ${Math.min(...settledSteps)}, max ${Math.max(...settledSteps)}; held at settlement for ${[...new Set(measured.settled.map((call) => call.boundOutputTokens))].join(', ')} output tokens; extend answered granted ${measured.grantedAnswers}, refused ${measured.refusedAnswers})`,
    );
    console.log(
      `by the stream's rule (QuotaMeter)     ${rule.defaults} (reference settings: ${rule.reference}; the stream counts UTF-8 bytes, so at ${BYTES_PER_TOKEN} bytes a token the grant reaches the whole bound after ${ANSWER_TOKENS / BYTES_PER_TOKEN} tokens)`,
    );
    console.log(`reference copy                        ${referenceCounted.steps} steps over its ${MEASURED_CALLS} calls`);
    const roundTrips = measured.stepRoundTrips;
    const chunkBytes = TOKENS_PER_CHUNK * BYTES_PER_TOKEN;
    console.log(
      `a step's round trip                   from the stream: p50 ${percentile(roundTrips, 50).toFixed(2)} ms, p99 ${percentile(roundTrips, 99).toFixed(2)} ms (${roundTrips.length} steps); inside the object's extend: ${(measured.stepMs / Math.max(1, measured.steps)).toFixed(2)} ms on average (workerd's clocks, which move on I/O); the stream asks ${defaultSettings.askAheadTokens} bytes = ${(defaultSettings.askAheadTokens / chunkBytes).toFixed(1)} chunks ahead of the usable grant`,
    );

    const figures = {
      defaults: { p50: percentile(times.defaults, 50), p99: percentile(times.defaults, 99) },
      reference: { p50: percentile(times.reference, 50), p99: percentile(times.reference, 99) },
    };
    const perStep = (difference: number) => (steps > 0 ? `${(difference / steps).toFixed(2)} ms` : 'n/a');
    const label = (text: string) => text.padEnd(46);
    console.log(
      `-- 3. added latency per step at the stream: the whole call (request to the last byte read by the client), ${MEASURED_CALLS} calls each (p99 of ${MEASURED_CALLS} is about the slowest)`,
    );
    console.log(
      `${label(`defaults (${steps.toFixed(0)} steps a call)`)}p50 ${figures.defaults.p50.toFixed(2)} ms  p99 ${figures.defaults.p99.toFixed(2)} ms`,
    );
    console.log(
      `${label(`reference (QUOTA_STEP_TOKENS ${REFERENCE_STEP_TOKENS}, 0 steps)`)}p50 ${figures.reference.p50.toFixed(2)} ms  p99 ${figures.reference.p99.toFixed(2)} ms`,
    );
    const p50Difference = figures.defaults.p50 - figures.reference.p50;
    const p99Difference = figures.defaults.p99 - figures.reference.p99;
    console.log(
      `${label('added per step (difference / steps)')}p50 ${perStep(p50Difference)} (${p50Difference.toFixed(2)} ms / ${steps.toFixed(0)})  p99 ${perStep(p99Difference)} (${p99Difference.toFixed(2)} ms / ${steps.toFixed(0)})`,
    );
    console.log(
      `${label('ratio defaults / reference')}p50 ${(figures.defaults.p50 / figures.reference.p50).toFixed(3)}  p99 ${(figures.defaults.p99 / figures.reference.p99).toFixed(3)}`,
    );
  } finally {
    for (const copy of copies) await copy.gateway.stop();
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  printClaudeCodeBalance();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runQuotaStepsBench();
}
