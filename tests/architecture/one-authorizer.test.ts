/**
 * One authorizer (docs/architecture.md, "Where each decision lives"): a gateway call's route, key and
 * hold are chosen by `decideCall` (workers/shared/authorize/decide-call.ts) and nowhere else. Read
 * from the text of every tracked source and SQL function file, so a second decider fails here the
 * moment it is written:
 * - the route policies (`byok_first`, `platform_first`) are applied only by the decision (SQL and the
 *   gateway only carry the feature's policy as a fact; the API and the console let a developer set it);
 * - the refusals only the route choice can give (`byok_missing`, `developer_key_missing`, `no_pool`)
 *   are produced only by the decision (the gateway maps them to messages);
 * - the decision is taken only by the wallet object (and its checks reused by local usage reports);
 * - no SQL function chooses a route or holds a call's worst case.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function trackedFiles(...patterns: string[]): string[] {
  return execFileSync('git', ['ls-files', '-co', '--exclude-standard', ...patterns], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '' && !file.includes('node_modules/') && existsSync(join(root, file)));
}

const isTest = (file: string) => /\.test\.tsx?$/.test(file) || file.startsWith('tests/') || file.startsWith('workers/test/');
const sources = () => trackedFiles('*.ts', '*.tsx').filter((file) => !isTest(file));
const text = (file: string) => readFileSync(join(root, file), 'utf8');
const mentioning = (files: string[], pattern: RegExp) => files.filter((file) => pattern.test(text(file)));

const decision = 'workers/shared/authorize/decide-call.ts';

describe('one authorizer', () => {
  it('applies the route policies only in decideCall: the gateway, the wallet code and SQL carry the policy as a fact', () => {
    const policies = /['"](byok_first|platform_first)['"]/;
    const deciding = mentioning(sources(), policies).filter(
      (file) =>
        file.startsWith('workers/gateway/') ||
        file.startsWith('workers/shared/wallet/') ||
        file.startsWith('workers/shared/authorize/') ||
        file.startsWith('workers/shared/calls/'),
    );
    // The context's fact (its type) and the decision.
    expect(deciding.sort()).toEqual([decision, 'workers/shared/wallet/lease-context.ts'].sort());
    expect(mentioning(trackedFiles('migrations/functions/*.sql'), /byok_first|platform_first/)).toEqual([]);
  });

  it('gives the route choice’s own refusals only in decideCall (the gateway only words them)', () => {
    const refusals = /['"](byok_missing|developer_key_missing|no_pool)['"]/;
    expect(mentioning(sources(), refusals).sort()).toEqual([decision, 'workers/gateway/src/routing/call-plan.ts'].sort());
    expect(mentioning(trackedFiles('migrations/functions/*.sql'), /byok_missing|developer_key_missing|no_pool/)).toEqual([]);
  });

  it('is called only by the wallet object (its authorize step); its checks also by local usage reports', () => {
    expect(mentioning(sources(), /\bdecideCall\(/).sort()).toEqual([decision, 'workers/gateway/src/wallet/authorize-step.ts'].sort());
    expect(mentioning(sources(), /\bchooseRoute\(/)).toEqual([decision]);
    expect(mentioning(sources(), /\bcheckCall\(/).sort()).toEqual([decision, 'workers/api/src/routes/usage-local.ts'].sort());
  });

  it('leaves no per-call decider: no SQL function authorizes a call or reserves its hold, no switch selects another path', () => {
    const functions = trackedFiles('migrations/functions/*.sql');
    expect(functions).not.toContain('migrations/functions/faucet_authorize_call.sql');
    expect(mentioning(functions, /faucet_authorize_call/)).toEqual([]);
    // A hold of a call's own (test support still reserves one to stand for another hold) is taken by no function.
    expect(mentioning(functions, /faucet_reserve_hold\(/)).toEqual(['migrations/functions/faucet_reserve_hold.sql']);
    expect(mentioning([...sources(), 'wrangler.toml'], /WALLET_LEASES/)).toEqual([]);
  });
});
