/**
 * The real Claude Code CLI (`@anthropic-ai/claude-code`, pinned; its native binary comes in the
 * platform's optional package), run in print mode the way a user points it at Faucet: the gateway
 * as `ANTHROPIC_BASE_URL`, a session token as `ANTHROPIC_AUTH_TOKEN`, a Claude model the catalog
 * prices, and nothing else but what keeps it offline (no telemetry, no update check, no
 * nonessential traffic, a fresh home and config). The stack's `anthropic` pool is the fake upstream
 * (tests/adversarial/fake-anthropic-messages.ts), steered by markers in the prompt.
 *
 * Claude Code asks again without a beta or field the gateway refused, so a run that ends well
 * proves little alone: a forwarder notes every request that reached the gateway, and each must have
 * been served. Each call is then found by its id (the message id is `msg_<call id>`) in the fake's
 * log, booked exactly once (the upstream audit), on the user's receipts with the provider's tokens,
 * and charged to the wallet, which stays above zero.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { addUsd, compareUsd, formatUsd, parseWireAmount, subtractUsd, usdFromUnits } from '#shared/money/index.ts';
import type { AnsweredCall, RefusedCall } from '../adversarial/fake-upstream-kit.ts';
import { runUpstreamAudit } from '../load/upstream-audit-report.ts';
import { fundedSession } from './funded-session.ts';
import { type RecordingForwarder, recordingForwarder } from './recording-forwarder.ts';

const stack = inject('stack');
/** As a Claude Code user names it (`--model`); the catalog knows the bare name. */
const model = 'claude-haiku-4-5';
const funded = '1.00000000';

/** The native binary of the platform's optional package (`@anthropic-ai/claude-code-<os>-<arch>[-musl]`), or null. */
function claudeCodeBinary(): string | null {
  const require = createRequire(import.meta.url);
  for (const variant of [`${process.platform}-${process.arch}`, `${process.platform}-${process.arch}-musl`]) {
    try {
      const directory = dirname(require.resolve(`@anthropic-ai/claude-code-${variant}/package.json`));
      const binary = join(directory, process.platform === 'win32' ? 'claude.exe' : 'claude');
      if (existsSync(binary)) return binary;
    } catch {
      // Not installed for this variant.
    }
  }
  return null;
}

const binary = claudeCodeBinary();
// Only a platform Claude Code ships no binary for may skip; on linux-x64 a missing binary fails below.
const unsupported = binary === null && !(process.platform === 'linux' && process.arch === 'x64');
if (unsupported) console.warn(`claude-code.test.ts skipped: no Claude Code binary is installed for ${process.platform}-${process.arch}`);

interface Block {
  type: string;
  [field: string]: unknown;
}
/** One entry of `--output-format json --verbose`: the transcript, its last entry the result. */
interface TranscriptEntry {
  type: string;
  subtype?: string;
  message?: { id?: string; content?: Block[] };
  result?: string;
  is_error?: boolean;
  usage?: { input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number; output_tokens: number };
}

/** A scratch folder: the project Claude Code works in, and a fresh home for each run. */
let scratch: string;
let project: string;
let token: string;
let forwarder: RecordingForwarder;

/** `claude -p PROMPT` in the project, against the gateway through the forwarder, as a user with a fresh home. */
async function claude(prompt: string, options: string[] = []) {
  const home = mkdtempSync(join(scratch, 'home-'));
  // `--verbose` makes the JSON the whole transcript, whose message ids name the gateway's calls.
  const child = spawn(binary!, ['-p', prompt, '--model', model, '--output-format', 'json', '--verbose', ...options], {
    cwd: project,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 45_000,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, '.claude'),
      ANTHROPIC_BASE_URL: forwarder.url,
      ANTHROPIC_AUTH_TOKEN: token,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => void (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => void (stderr += chunk));
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(exitCode, `claude exited ${exitCode}: ${stderr || stdout.slice(0, 2000)}`).toBe(0);
  const transcript = JSON.parse(stdout) as TranscriptEntry[];
  const result = transcript.at(-1)!;
  // Each answer is one assistant entry per content block, all with its message id.
  const messages = new Map<string, Block[]>();
  for (const entry of transcript) {
    if (entry.type !== 'assistant' || entry.message?.id === undefined) continue;
    messages.set(entry.message.id, [...(messages.get(entry.message.id) ?? []), ...(entry.message.content ?? [])]);
  }
  return { result, transcript, messages: [...messages].map(([id, content]) => ({ callId: id.replace(/^msg_/, ''), content })) };
}

async function upstreamLog(): Promise<{ calls: AnsweredCall[]; refused: RefusedCall[] }> {
  return (await (await fetch(stack.fakeUpstreamCallsUrl)).json()) as { calls: AnsweredCall[]; refused: RefusedCall[] };
}

async function user<T>(path: string): Promise<T> {
  const response = await fetch(`${stack.apiUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

interface Receipt {
  provider: string;
  model: string;
  route_mode: string;
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
  charged_usd: string;
}

/**
 * What reached the gateway was these calls, each served the first time; the provider answered each
 * once and each is booked once with its tokens (which Claude Code reported too); the wallet paid
 * exactly the receipts and is still above zero.
 */
async function expectServedAndBilledOnce(run: Awaited<ReturnType<typeof claude>>): Promise<void> {
  const callIds = run.messages.map((message) => message.callId);
  expect(forwarder.requests).toEqual(
    callIds.map(() => expect.objectContaining({ method: 'POST', path: '/v1/messages?beta=true', status: 200 })),
  );

  const log = await upstreamLog();
  const answered = callIds.map((callId) => {
    const entries = log.calls.filter((call) => call.callId === callId);
    expect(entries).toEqual([expect.objectContaining({ api: 'messages', model, stream: true, ending: 'completed' })]);
    return entries[0]!;
  });
  expect(log.refused.filter((call) => call.callId !== null && callIds.includes(call.callId))).toEqual([]);
  const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
  const usage = run.result.usage!;
  expect(usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens).toBe(
    sum(answered.map((call) => call.inputTokens)),
  );
  expect(usage.output_tokens).toBe(sum(answered.map((call) => call.outputTokens)));

  // The receipts list flushes the wallet object's bookings first; a booking still settling shows up on a later read.
  const receipts = await vi.waitFor(
    async () => {
      const { data } = await user<{ data: Receipt[] }>('/v1/user/usage?limit=50');
      expect(data).toHaveLength(callIds.length);
      return data;
    },
    { timeout: 10_000, interval: 200 },
  );
  const tokens = (calls: Array<{ input: number; output: number }>) => calls.map(({ input, output }) => `${input}/${output}`).sort();
  expect(tokens(receipts.map((receipt) => ({ input: receipt.input_tokens, output: receipt.output_tokens })))).toEqual(
    tokens(answered.map((call) => ({ input: call.inputTokens, output: call.outputTokens }))),
  );
  for (const receipt of receipts) {
    expect(receipt).toMatchObject({ provider: 'anthropic', model, route_mode: 'platform', estimated: false });
    expect(compareUsd(parseWireAmount(receipt.charged_usd), usdFromUnits(0n))).toBe(1);
  }

  const audit = await runUpstreamAudit(stack.databaseUrl, {
    settleGraceSeconds: 600,
    reported: answered.map((call) => ({ callId: call.callId!, inputTokens: call.inputTokens, outputTokens: call.outputTokens })),
  });
  expect(audit.upstream).toMatchObject({
    ok: true,
    upstreamCalls: callIds.length,
    unbilledCalls: 0,
    unbilledTokens: 0,
    doubleBilledCalls: 0,
  });

  const charged = addUsd(...receipts.map((receipt) => parseWireAmount(receipt.charged_usd)));
  const wallet = await user<{ balance_usd: string; held_usd: string; available_usd: string }>('/v1/user/wallet');
  expect(wallet.balance_usd).toBe(formatUsd(subtractUsd(parseWireAmount(funded), charged)));
  // What the wallet object holds is its lease on the balance (docs/edge.md), never more than there is.
  const [balance, held, available] = [wallet.balance_usd, wallet.held_usd, wallet.available_usd].map((amount) => parseWireAmount(amount));
  const zero = usdFromUnits(0n);
  expect(compareUsd(balance!, zero)).toBe(1);
  expect(compareUsd(held!, balance!)).toBeLessThanOrEqual(0);
  expect(compareUsd(available!, zero)).toBeGreaterThanOrEqual(0);
}

describe.skipIf(unsupported)('the real Claude Code CLI pointed at the gateway', () => {
  beforeAll(async () => {
    if (binary === null) {
      throw new Error(
        'No Claude Code binary in node_modules (@anthropic-ai/claude-code-linux-x64): run npm ci without omitting optional dependencies',
      );
    }
    scratch = mkdtempSync(join(tmpdir(), 'faucet-claude-code-'));
    project = join(scratch, 'project');
    mkdirSync(project);
    forwarder = await recordingForwarder(stack.gatewayUrl);
  });

  afterAll(async () => {
    await forwarder?.close();
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  beforeEach(async () => {
    // A new end user per run, so the receipts and the wallet are this run's alone.
    token = await fundedSession(stack, funded);
    forwarder.requests.length = 0;
  });

  it('answers a prompt in print mode with the upstream’s text; the one call is served the first time and billed once', async () => {
    const run = await claude('Say hello to Faucet. [fake:tool=none]');
    expect(run.result).toMatchObject({
      type: 'result',
      subtype: 'success',
      is_error: false,
      result: 'lorem ipsum lorem ipsum lorem ipsum ',
    });
    expect(run.messages).toHaveLength(1);
    await expectServedAndBilledOnce(run);
  });

  it('runs a tool turn: Read’s result goes back with the signed thinking, and both calls are billed once', async () => {
    const note = join(project, 'note.txt');
    writeFileSync(note, 'The faucet drips 42 times.\n');
    const run = await claude(`What does the note say? [fake:tool=Read] [fake:input=${JSON.stringify({ file_path: note })}]`, [
      '--allowedTools',
      'Read',
    ]);
    expect(run.messages.map((message) => message.content.map((block) => block.type))).toEqual([
      ['thinking', 'tool_use'],
      ['thinking', 'text'],
    ]);
    const [thinking, toolUse] = run.messages[0]!.content;
    // The thinking is hidden (display omitted) but signed: the fake refuses the second call unless it comes back.
    expect(thinking).toMatchObject({ type: 'thinking', thinking: '', signature: expect.stringMatching(/\S/) });
    expect(toolUse).toMatchObject({ type: 'tool_use', name: 'Read', input: { file_path: note } });
    const toolResults = run.transcript.flatMap((entry) =>
      entry.type === 'user' ? (entry.message?.content ?? []).filter((block) => block.type === 'tool_result') : [],
    );
    expect(toolResults).toEqual([
      expect.objectContaining({ tool_use_id: toolUse?.id, content: expect.stringContaining('The faucet drips 42 times.') }),
    ]);
    expect(run.result).toMatchObject({
      subtype: 'success',
      is_error: false,
      result: expect.stringMatching(/^Tool result: .*The faucet drips 42 times\./s),
    });
    await expectServedAndBilledOnce(run);
  });
});
